"""WebServer: uvicorn in a thread, on a bare ASGI app."""

from __future__ import annotations

import socket

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from ragloom_app.web.server import WebServer
from tests.helpers.ports import free_port


def _app() -> Starlette:
    return Starlette(routes=[Route("/", lambda r: PlainTextResponse("served"))])


def test_start_serve_close() -> None:
    closed: list[bool] = []
    port = free_port()
    server = WebServer(_app(), "127.0.0.1", port, on_close=lambda: closed.append(True))
    assert not server.listening
    server.start()
    assert server.listening
    assert httpx.get(server.url, timeout=5).text == "served"
    server.close()
    server.close()  # twice is fine
    assert not server.listening and closed == [True]


def test_a_taken_port_fails_to_start() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = WebServer(_app(), "127.0.0.1", taken.getsockname()[1])
        with pytest.raises(OSError, match="could not listen"):
            server.start()


def test_ipv6_url() -> None:
    assert WebServer(_app(), "::1", 7860).url == "http://[::1]:7860/"
