"""Errors of the HTTP API as JSON: ``{"error": {"code", "message", "type", "param"}}``.

Every refusal has a stable ``code`` a program can branch on and a ``message`` a person
can read. ``type`` and ``param`` are the fields of an OpenAI error, on both endpoints so
that one parser reads them: ``type`` names the kind of failure (:func:`error_type`), and
``param`` the request field at fault, when one is (``"messages[0].content"``), else null.

Unknown ids are ``not_found`` (404), a body or parameter the API cannot take is
``invalid_request`` (422), and a setting, mode or question the app refuses is
``invalid_request`` too, with the app's own words (:class:`~ragloom_app.errors.UserFacingError`),
and a database or an index's store that cannot be reached (PostgreSQL or a Chroma server
restarting) is ``unavailable`` (503, with ``Retry-After``), and an upload past the
user's queued jobs (``MAX_JOBS_PER_USER``) is ``busy`` (429, with ``Retry-After``), and
a write the full disk refused (:class:`~ragloom_app.errors.DiskFullError`) is
``insufficient_storage`` (507).
Nothing a client sends is answered with a 500: an unexpected failure is logged under a
reference that the ``internal_error`` message carries, with no stack trace or path.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException

from ragloom.stores.base import StoreUnavailableError
from ragloom_app.conversations import ConversationBusyError, UnknownConversationError
from ragloom_app.errors import DiskFullError, UserFacingError, scrub, user_error
from ragloom_app.jobs import JobLimitError

__all__ = ["ApiError", "api_error", "error_body", "error_type", "install_error_handlers"]

logger = logging.getLogger(__name__)

_CODES = {404: "not_found", 405: "method_not_allowed", 422: "invalid_request"}

RETRY_AFTER_SECONDS = 5
"""What a 503 ``unavailable`` asks a client to wait before trying again."""

JOB_LIMIT_RETRY_SECONDS = 10
"""What a 429 ``busy`` for ``MAX_JOBS_PER_USER`` asks a client to wait: room comes when
one of the user's jobs ends, which takes seconds to minutes."""


class ApiError(Exception):
    """A refusal the API answers with ``status`` and a JSON error body; ``param`` names
    the request field at fault, if one is; ``headers`` go with it (``Retry-After``)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.param = param
        self.headers = headers

    def body(self) -> dict[str, Any]:
        """The JSON body that answers it (:func:`error_body`), or a stream's error event."""
        return error_body(self.status, self.code, self.message, param=self.param)


def not_found(what: str, ident: str) -> ApiError:
    """The 404 of an id that names nothing this client may see."""
    return ApiError(404, "not_found", f"no {what} {ident!r}")


_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    503: "unavailable_error",
}


def error_type(status: int) -> str:
    """The OpenAI-style ``type`` of an error answered with ``status``: the names
    llama.cpp's server gives (``invalid_request_error`` for any other 4xx,
    ``server_error`` for any other 5xx), with ``rate_limit_error`` for a 429."""
    return _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")


def error_body(
    status: int, code: str, message: str, *, details: Any = None, param: str | None = None
) -> dict[str, Any]:
    """The JSON body of an error answered (or, in a stream, meant) with ``status``."""
    error: dict[str, Any] = {
        "code": code,
        "message": message,
        "type": error_type(status),
        "param": param,
    }
    if details is not None:
        error["details"] = details
    return {"error": error}


def _validation_details(exc: RequestValidationError) -> list[dict[str, Any]]:
    # Only where and what: pydantic's "input" would echo the client's (maybe huge) value.
    return [
        {"loc": [str(part) for part in e.get("loc", ())], "msg": str(e.get("msg", ""))[:200]}
        for e in exc.errors()[:20]
    ]


_TYPE_TAG = re.compile(r"[a-z]+(-[a-z]+)*\[.*\]|constrained-[a-z]+|str|int|float|bool|bytes|none")
"""A part of a validation error's ``loc`` that names a type, not a field: pydantic's tag
for the branch of a union (``constrained-str``, ``list[TextPart]``) or for a validator
(``function-after[...]``)."""


def _field(loc: Sequence[Any]) -> str | None:
    """The request field a validation error's ``loc`` points at, OpenAI's way:
    ``("body", "messages", 0, "content")`` is ``"messages[0].content"``, and so is
    ``("body", "messages", 0, "content", "constrained-str")``: a type is no field."""
    name = ""
    for part in loc[1:]:  # the first says where: body, query, path
        if isinstance(part, int):
            name += f"[{part}]"
        elif not _TYPE_TAG.fullmatch(str(part)):
            name += f".{part}" if name else str(part)
    return name or None


def api_error(exc: Exception, doing: str = "The request") -> ApiError:
    """What the API answers for ``exc``, raised while ``doing`` (the words of a failure of
    Ragloom's): the one mapping of the exception handlers and of the answers' streams,
    whose error event says what the response would have said with its status."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, UnknownConversationError):  # e.g. deleted while answered
        return ApiError(404, "not_found", scrub(str(exc)))
    if isinstance(exc, ConversationBusyError):  # its answer ends within its deadline
        return ApiError(409, "conversation_busy", str(exc), headers={"Retry-After": "1"})
    if isinstance(exc, JobLimitError):  # room comes as one of the user's jobs ends
        retry = {"Retry-After": str(JOB_LIMIT_RETRY_SECONDS)}
        return ApiError(429, "busy", str(exc), headers=retry)
    if isinstance(exc, DiskFullError):  # the request was fine: the server needs room
        return ApiError(507, "insufficient_storage", scrub(str(exc)))
    if isinstance(exc, UserFacingError):
        return ApiError(422, "invalid_request", scrub(str(exc)))
    if isinstance(exc, OperationalError):
        # The database (or a connection to it) is gone for now: the request was fine.
        logger.warning("the database cannot be reached: %s", scrub(str(exc.orig))[:300])
        return _unavailable("The app's database cannot be reached right now.")
    if isinstance(exc, StoreUnavailableError):
        # Its words are fixed and name no address (StoreUnavailableError's promise).
        logger.warning("an index's store cannot be reached: %s", exc)
        return _unavailable(f"An index's store cannot be reached right now: {exc}.")
    failure = user_error(exc, doing, log=logger)
    return ApiError(500, "internal_error", failure.message)


def install_error_handlers(api: FastAPI) -> None:
    """Answer every error of ``api``'s routes as JSON (see the module docstring)."""

    async def _answered(request: Request, exc: Exception) -> JSONResponse:
        error = api_error(exc)
        return JSONResponse(error.body(), status_code=error.status, headers=error.headers)

    # Exception's handler runs outermost (Starlette's ServerErrorMiddleware, which then
    # raises the exception on for the server to log): the expected ones are named.
    for kind in (ApiError, UserFacingError, OperationalError, StoreUnavailableError, Exception):
        api.add_exception_handler(kind, _answered)

    @api.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        body = error_body(
            422,
            "invalid_request",
            "the request is not valid",
            details=_validation_details(exc),
            param=_field(errors[0].get("loc", ())) if errors else None,
        )
        return JSONResponse(body, status_code=422)

    @api.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        # FastAPI's 400 is a body that is not JSON at all: bad input like any other.
        status = 422 if exc.status_code == 400 else exc.status_code
        code = _CODES.get(status, "http_error")
        return JSONResponse(
            error_body(status, code, str(exc.detail)), status_code=status, headers=exc.headers
        )


def _unavailable(message: str) -> ApiError:
    """The 503 of a server the app needs being away: the request was fine, try it again."""
    return ApiError(503, "unavailable", message, headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
