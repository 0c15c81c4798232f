"""How the guards answer a refused request: JSON on the HTTP API's paths (its clients
read ``{"error": {"code", "message"}}``), plain text elsewhere (gradio's and a browser's)."""

from __future__ import annotations

from starlette.responses import JSONResponse, PlainTextResponse, Response

__all__ = ["API_PATHS", "refusal"]

API_PATHS = ("/api/v1", "/v1")
"""The paths of the HTTP API and the OpenAI-compatible endpoint."""

_CODES = {
    400: "bad_request",
    403: "forbidden",
    411: "length_required",
    413: "request_too_large",
    507: "insufficient_storage",
}


def refusal(path: str, status: int, message: str) -> Response:
    """The response that refuses a request to ``path`` with ``message``."""
    if path.startswith(API_PATHS):
        error = {"code": _CODES.get(status, "refused"), "message": message}
        return JSONResponse({"error": error}, status_code=status)
    return PlainTextResponse(message, status_code=status)
