"""Errors of the HTTP API as JSON: ``{"error": {"code": ..., "message": ...}}``.

Every refusal has a stable ``code`` a program can branch on and a ``message`` a person
can read. Unknown ids are ``not_found`` (404), a body or parameter the API cannot take is
``invalid_request`` (422), and a setting, mode or question the app refuses is
``invalid_request`` too, with the app's own words (:class:`~ragloom_app.errors.UserFacingError`),
and a database or an index's store that cannot be reached (PostgreSQL or a Chroma server
restarting) is ``unavailable`` (503, with ``Retry-After``).
Nothing a client sends is answered with a 500: an unexpected failure is logged under a
reference that the ``internal_error`` message carries, with no stack trace or path.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException

from ragloom.stores.base import StoreUnavailableError
from ragloom_app.errors import UserFacingError, scrub, user_error

__all__ = ["ApiError", "error_body", "install_error_handlers"]

logger = logging.getLogger(__name__)

_CODES = {404: "not_found", 405: "method_not_allowed", 422: "invalid_request"}

RETRY_AFTER_SECONDS = 5
"""What a 503 ``unavailable`` asks a client to wait before trying again."""


class ApiError(Exception):
    """A refusal the API answers with ``status`` and a JSON error body."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def not_found(what: str, ident: str) -> ApiError:
    """The 404 of an id that names nothing this client may see."""
    return ApiError(404, "not_found", f"no {what} {ident!r}")


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    """The JSON body of an error response."""
    error: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    return {"error": error}


def _validation_details(exc: RequestValidationError) -> list[dict[str, Any]]:
    # Only where and what: pydantic's "input" would echo the client's (maybe huge) value.
    return [
        {"loc": [str(part) for part in e.get("loc", ())], "msg": str(e.get("msg", ""))[:200]}
        for e in exc.errors()[:20]
    ]


def install_error_handlers(api: FastAPI) -> None:
    """Answer every error of ``api``'s routes as JSON (see the module docstring)."""

    @api.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(error_body(exc.code, exc.message), status_code=exc.status)

    @api.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        body = error_body("invalid_request", "the request is not valid", _validation_details(exc))
        return JSONResponse(body, status_code=422)

    @api.exception_handler(UserFacingError)
    async def _refused(request: Request, exc: UserFacingError) -> JSONResponse:
        from ragloom_app.pages.chat import UnknownConversationError

        if isinstance(exc, UnknownConversationError):  # e.g. deleted while answered
            return JSONResponse(error_body("not_found", scrub(str(exc))), status_code=404)
        return JSONResponse(error_body("invalid_request", scrub(str(exc))), status_code=422)

    @api.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        # FastAPI's 400 is a body that is not JSON at all: bad input like any other.
        status = 422 if exc.status_code == 400 else exc.status_code
        code = _CODES.get(status, "http_error")
        return JSONResponse(
            error_body(code, str(exc.detail)), status_code=status, headers=exc.headers
        )

    @api.exception_handler(OperationalError)
    async def _database_down(request: Request, exc: OperationalError) -> JSONResponse:
        # The database (or a connection to it) is gone for now: the request was fine.
        logger.warning("the database cannot be reached: %s", scrub(str(exc.orig))[:300])
        return _unavailable("The app's database cannot be reached right now.")

    @api.exception_handler(StoreUnavailableError)
    async def _store_down(request: Request, exc: StoreUnavailableError) -> JSONResponse:
        # Its words are fixed and name no address (StoreUnavailableError's promise).
        logger.warning("an index's store cannot be reached: %s", exc)
        return _unavailable(f"An index's store cannot be reached right now: {exc}.")

    @api.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        failure = user_error(exc, "The request", log=logger)
        return JSONResponse(error_body("internal_error", failure.message), status_code=500)


def _unavailable(message: str) -> JSONResponse:
    """The 503 of a server the app needs being away: the request was fine, try it again."""
    return JSONResponse(
        error_body("unavailable", message),
        status_code=503,
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )
