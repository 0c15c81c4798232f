"""How the guards answer a refused request: JSON on the HTTP API's paths (its clients
read ``{"error": {"code", "message", "type", "param"}}``), plain text elsewhere (gradio's
and a browser's)."""

from __future__ import annotations

from starlette.responses import JSONResponse, PlainTextResponse, Response

from ragloom_app.api import API_PATH_PREFIXES
from ragloom_app.api.errors import error_body

__all__ = ["refusal"]

_CODES = {
    400: "bad_request",
    403: "forbidden",
    411: "length_required",
    413: "request_too_large",
    507: "insufficient_storage",
}


def refusal(path: str, status: int, message: str) -> Response:
    """The response that refuses a request to ``path`` with ``message``."""
    if path.startswith(API_PATH_PREFIXES):
        body = error_body(status, _CODES.get(status, "refused"), message)
        return JSONResponse(body, status_code=status)
    return PlainTextResponse(message, status_code=status)
