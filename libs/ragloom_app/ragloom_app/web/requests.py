"""What a request may ask of the server: no fetching of URLs, bodies of bounded size.

Gradio 6 fetches a URL on the server's behalf in three ways, all refused here (403):

- ``GET /gradio_api/file=https://...`` (and the older ``/gradio_api/file/https://...``)
  streams any public URL back: an open relay, and a request out of an offline app;
- ``GET /gradio_api/proxy=...`` forwards to Spaces loaded with ``gr.load`` (Ragloom loads
  none, so nothing may use it);
- an event's input file given as ``{"path": "https://...", "meta": {"_type":
  "gradio.FileData"}}`` is downloaded before the handler runs (gradio's
  ``async_move_files_to_cache``): the index would then hold a page fetched by the server.

Bodies: an upload (multipart, to gradio's upload route or the HTTP API's files) must say
its size and stay within ``max_upload_request_bytes``,
and may not leave less than ``min_free_disk_bytes`` free where uploads are written (an
upload that is never indexed waits there up to a day); any other body stays within
``max_request_bytes``. All are refused before gradio reads a byte of them.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragloom.byte_sizes import size_text
from ragloom_app.web.refusals import refusal

__all__ = ["RequestGuard", "fetches_url"]

API_PREFIX = "/gradio_api/"
# Every scheme://, not only http(s): gradio fetches http(s) today, other schemes need not
# reach its code to find out.
_URL = re.compile(r"\s*[a-z][a-z0-9+.\-]*://", re.IGNORECASE)
_FILE_ROUTES = (f"{API_PREFIX}file=", f"{API_PREFIX}file/")
_PROXY_ROUTE = f"{API_PREFIX}proxy="
_RELAY_REFUSED = (
    "Refused: Ragloom does not fetch addresses on anyone's behalf. It works offline: "
    "download the page or file yourself and upload it."
)
_GRADIO_UPLOAD = f"{API_PREFIX}upload"


def _is_url(value: Any) -> bool:
    return isinstance(value, str) and _URL.match(value) is not None


def fetches_url(data: Any) -> bool:
    """Whether a decoded request body names a file by URL (gradio would download it).

    Any object with a ``path`` that is a URL counts, with or without gradio's ``meta``
    marker: no input of Ragloom's takes a file by address. Iterative, so a deeply nested
    body cannot exhaust the stack.
    """
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if _is_url(item.get("path")):
                return True
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


class RequestGuard:
    """ASGI middleware: refuse URL fetching and over-long bodies (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_request_bytes: int,
        max_upload_request_bytes: int,
        upload_dir: Path | None = None,
        min_free_disk_bytes: int = 0,
    ) -> None:
        self.app = app
        self.max_request_bytes = max_request_bytes
        self.max_upload_request_bytes = max_upload_request_bytes
        self.upload_dir = upload_dir
        self.min_free_disk_bytes = min_free_disk_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path.startswith(_PROXY_ROUTE) or any(
            path.startswith(route) and _is_url(path[len(route) :]) for route in _FILE_ROUTES
        ):
            await self._refuse(scope, receive, send, 403, _RELAY_REFUSED)
            return
        headers = Headers(scope=scope)
        if scope["method"] in ("GET", "HEAD", "OPTIONS") and not _has_body(headers):
            await self.app(scope, receive, send)
            return
        multipart = headers.get("content-type", "").lower().startswith("multipart/")
        if multipart and _is_upload_path(path):
            refusal = self._check_upload(headers)
            if refusal is not None:
                await self._refuse(scope, receive, send, *refusal)
                return
            await self.app(scope, receive, send)
            return
        await self._guard_body(scope, receive, send, headers)

    def _check_upload(self, headers: Headers) -> tuple[int, str] | None:
        declared = headers.get("content-length")
        if declared is None or not declared.isdigit():
            return 411, "Refused: an upload must state its size (a Content-Length header)."
        if int(declared) > self.max_upload_request_bytes:
            return 413, (
                f"Refused: this upload is {size_text(int(declared))}, and one upload may hold "
                f"at most {size_text(self.max_upload_request_bytes)} "
                "(MAX_UPLOAD_REQUEST_BYTES). Upload fewer files at a time, or add a folder "
                "with `ragloom index add`."
            )
        free = self._free_disk()
        if free is not None and free - int(declared) < self.min_free_disk_bytes:
            return 507, (
                f"Refused: this upload ({size_text(int(declared))}) would leave less than "
                f"{size_text(self.min_free_disk_bytes)} (MIN_FREE_DISK_BYTES) free on the disk "
                f"of Ragloom's data folder, which has {size_text(max(free, 0))} free. Free some "
                "space, or index the uploads waiting there."
            )
        return None

    def _free_disk(self) -> int | None:
        """Free bytes where uploads are written (None: no folder to watch)."""
        if self.upload_dir is None or not self.min_free_disk_bytes:
            return None
        folder = self.upload_dir
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent  # gradio creates it at the first upload
        return shutil.disk_usage(folder).free

    async def _guard_body(
        self, scope: Scope, receive: Receive, send: Send, headers: Headers
    ) -> None:
        too_long = (
            413,
            "Refused: a request to Ragloom's API may hold at most "
            f"{size_text(self.max_request_bytes)} (MAX_REQUEST_BYTES); this one holds more.",
        )
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_request_bytes:
            await self._refuse(scope, receive, send, *too_long)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_request_bytes:
                await self._refuse(scope, receive, send, *too_long)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if scope["path"].startswith(API_PREFIX) and body:
            try:
                data = json.loads(body)
            except (ValueError, RecursionError):
                data = None  # not JSON: gradio's own parsing refuses it
            if fetches_url(data):
                await self._refuse(scope, receive, send, 403, _RELAY_REFUSED)
                return
        await self.app(scope, _replay(body, receive), send)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, text: str) -> None:
        await refusal(str(scope["path"]), status, text)(scope, receive, send)


def _has_body(headers: Headers) -> bool:
    """Whether a request says it sends a body: one on a GET is held to the same limit
    (a route's guard would read it, and the server hold it whole)."""
    declared = headers.get("content-length", "0").strip()
    return declared != "0" or "transfer-encoding" in headers


def _is_upload_path(path: str) -> bool:
    """The paths that take uploads (up to ``max_upload_request_bytes``): gradio's and the
    HTTP API's. Any other body, multipart or not, is held to ``max_request_bytes``."""
    if path.startswith(_GRADIO_UPLOAD):
        return True
    return path.startswith("/api/v1/indices/") and path.rstrip("/").endswith("/files")


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then what the client sends (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
