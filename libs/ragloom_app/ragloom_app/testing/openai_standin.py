"""A stand-in OpenAI-compatible endpoint on loopback that streams fixed text (labelled as
such: for tests of a client's own control flow, retries, timeouts and limits, and for load
tests of the app's own overhead apart from the model's; never for answers).

It answers ``POST /v1/chat/completions`` (streamed or not) with :attr:`FakeEndpoint.reply`,
and ``POST /v1/embeddings`` with vectors of :attr:`FakeEndpoint.dimension` made from each
text's bytes (the same text, the same vector; listed last first, as a server may), after
:attr:`FakeEndpoint.delay` seconds, fails the first :attr:`FakeEndpoint.failures`
requests with :attr:`FakeEndpoint.failure_status`, and records how many requests it held
at once before replying (:attr:`FakeEndpoint.most_at_once`). For fault tests, a streamed
reply can be cut off after :attr:`FakeEndpoint.cut_after` pieces (the connection closed,
no end of stream) or hold a piece that is not JSON (:attr:`FakeEndpoint.malformed`).
``GET /v1/models`` answers :attr:`FakeEndpoint.models_status` (404 by default: a server
without that route) and counts the requests (:attr:`FakeEndpoint.model_listings`); the last
chat request's body is kept (:attr:`FakeEndpoint.last_body`). For malformed replies, a
stream can be given as its events' payloads (:attr:`FakeEndpoint.raw_chunks`) and a whole
reply as its body (:attr:`FakeEndpoint.raw_body`), each sent as JSON as they are.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeEndpoint", "fake_openai"]


@dataclass
class FakeEndpoint:
    """What the stand-in does, and what it saw; change the settings between requests."""

    url: str = ""
    reply: str = "A fixed reply."
    dimension: int = 8
    batches: list[int] = field(default_factory=list)
    delay: float = 0.0
    failures: int = 0
    failure_status: int = 503
    cut_after: int | None = None  # pieces a stream sends before the connection drops
    malformed: bool = False  # a stream's second piece is not JSON
    raw_chunks: list[Any] | None = None  # a stream's events, instead of the reply's words
    raw_body: Any = None  # a whole reply's body (status 200), instead of the reply
    models_status: int = 404  # a 200 lists one model owned by "fake"
    model_listings: int = 0
    last_body: dict[str, Any] = field(default_factory=dict)
    requests: int = 0
    most_at_once: int = 0
    _running: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _enter(self) -> bool:
        """Count a request; whether it is to fail."""
        with self._lock:
            self.requests += 1
            self._running += 1
            self.most_at_once = max(self.most_at_once, self._running)
            if self.failures > 0:
                self.failures -= 1
                return True
            return False

    def _leave(self) -> None:
        with self._lock:
            self._running -= 1


def _vector(text: str, dimension: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [digest[i % len(digest)] - 127.5 for i in range(dimension)]


def _chunk(content: str | None, finish: str | None = None) -> dict[str, Any]:
    delta = {"content": content} if content is not None else {}
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fake",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


@contextlib.contextmanager
def fake_openai() -> Iterator[FakeEndpoint]:
    """Serve the stand-in until the block ends; its ``url`` ends in ``/v1``."""
    endpoint = FakeEndpoint()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            if not self.path.endswith("/models"):
                self._send(404, {"error": {"message": "no such route"}})
                return
            with endpoint._lock:
                endpoint.model_listings += 1
            if endpoint.models_status != 200:
                self._send(endpoint.models_status, {"error": {"message": "no model list"}})
                return
            listed = [{"id": "fake", "object": "model", "owned_by": "fake"}]
            self._send(200, {"object": "list", "data": listed})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            endpoint.last_body = body
            fail = endpoint._enter()
            try:
                time.sleep(endpoint.delay)
            finally:
                # Counted as running until its reply begins: a client that has read the
                # reply may send its next request before this thread could say it ended
                # (most_at_once once counted one more than the client's bound).
                endpoint._leave()
            try:
                if fail:
                    self._send(endpoint.failure_status, {"error": {"message": "try again"}})
                elif self.path.endswith("/embeddings"):
                    self._embeddings(list(body.get("input") or []))
                elif body.get("stream"):
                    self._stream()
                elif endpoint.raw_body is not None:
                    self._send(200, endpoint.raw_body)
                else:
                    message = {"role": "assistant", "content": endpoint.reply}
                    choice = {"index": 0, "message": message, "finish_reason": "stop"}
                    usage = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
                    self._send(200, {"id": "x", "choices": [choice], "usage": usage})
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout under test)

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _embeddings(self, texts: list[str]) -> None:
            endpoint.batches.append(len(texts))
            data = [
                {"object": "embedding", "index": i, "embedding": _vector(t, endpoint.dimension)}
                for i, t in enumerate(texts)
            ]
            self._send(200, {"object": "list", "data": data[::-1], "model": "fake"})

        def _stream(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            if endpoint.raw_chunks is not None:
                for payload in endpoint.raw_chunks:
                    self._event(payload)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True
                return
            for number, word in enumerate(endpoint.reply.split(" ")):
                if number == endpoint.cut_after:
                    self.close_connection = True
                    return  # dropped: no finish reason, no [DONE]
                if number == 1 and endpoint.malformed:
                    self.wfile.write(b"data: {this is not json\n\n")
                    continue
                self._event(_chunk(word + " "))
            self._event(_chunk(None, "stop"))
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

        def _event(self, payload: dict[str, Any]) -> None:
            self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    endpoint.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
