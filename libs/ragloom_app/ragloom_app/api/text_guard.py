"""The NUL character is refused in the text of every API request: path, query, JSON body.

No text Ragloom keeps may hold U+0000: PostgreSQL's ``text`` cannot (psycopg refuses the
statement, a mere lookup included, so a login name holding one was a 500 there), and
SQLite would keep it where nobody sees it. A request holding one is refused whole, before
a route reads it, the same way on every database: 422 ``invalid_request``. The bytes of
uploaded files are not the request's text: they are the readers' to judge (the full-text
store stores a NUL of a chunk as U+FFFD, keeping every offset).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request

from ragloom_app.api.errors import ApiError
from ragloom_app.api.media_types import is_json_media_type

__all__ = ["refuse_nul_text"]

_NUL = "\x00"
_JSON_NUL = "\\u0000"  # JSON can write a NUL no other way


async def refuse_nul_text(request: Request) -> None:
    """A dependency of every API route: :class:`ApiError` 422 when the request's path,
    query or JSON body holds the NUL character."""
    where = None
    if _NUL in request.scope.get("path", ""):
        where = "path"
    elif any(_NUL in k or _NUL in v for k, v in request.query_params.multi_items()):
        where = "query"
    elif is_json_media_type(request.headers.get("content-type", "")):
        body = await request.body()  # kept by the request: the route reads it again
        if _holds_nul(body):
            where = "body"
    if where is not None:
        raise ApiError(
            422,
            "invalid_request",
            f"the request's {where} holds the NUL character (U+0000), which no text may hold",
        )


def _holds_nul(body: bytes) -> bool:
    """Whether a string or key of the JSON ``body`` holds a NUL (invalid JSON: no; the
    route refuses that itself). The body may be UTF-8, -16 or -32, as the route's own
    parser reads it: the escape is looked for in its text, not its bytes."""
    encoding = json.detect_encoding(body)
    if encoding == "utf-8":  # the usual body: looked at as bytes, not decoded first
        if _JSON_NUL.encode() not in body:
            return False
    else:
        try:
            if _JSON_NUL not in body.decode(encoding):
                return False
        except (UnicodeDecodeError, LookupError):
            return False  # not JSON the route can read either
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return False
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _NUL in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
