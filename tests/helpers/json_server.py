"""Loopback HTTP servers that answer with JSON, for endpoint-probing tests."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
    """Answer ``handler``'s request with ``payload`` as JSON."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@contextlib.contextmanager
def serve_handler(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve requests with ``handler`` on loopback until the block ends; yields the /v1 URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextlib.contextmanager
def serve_json(path: str, payload: Any) -> Iterator[str]:
    """Serve ``payload`` at ``path`` (404 elsewhere) until the block ends; yields the /v1 URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path == path
            send_json(self, 200 if found else 404, payload if found else {})

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

    with serve_handler(Handler) as url:
        yield url
