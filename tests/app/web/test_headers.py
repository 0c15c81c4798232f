"""The Content-Security-Policy and other headers, on a bare ASGI app."""

from __future__ import annotations

import base64
import hashlib

from starlette.applications import Starlette
from starlette.responses import HTMLResponse, JSONResponse, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from ragloom_app.web.headers import SECURITY_HEADERS, SecurityHeaders, page_policy

PAGE = (
    b"<html><head><script>window.config = {};</script>"
    b'<script type="module" src="./assets/app.js"></script>'
    b"<script data-mode>\n  boot();\n</script></head><body></body></html>"
)


def _sha(body: bytes) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(body).digest()).decode() + "'"


def test_the_policy_hashes_inline_scripts_only() -> None:
    policy = page_policy(PAGE)
    script_src = next(d for d in policy.split("; ") if d.startswith("script-src")).split()
    assert script_src == [
        "script-src",
        "'self'",
        "'unsafe-eval'",
        _sha(b"window.config = {};"),
        _sha(b"\n  boot();\n"),
    ]
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy


def _client() -> TestClient:
    async def chunks():  # the page in pieces, as a streamed body
        for start in range(0, len(PAGE), 10):
            yield PAGE[start : start + 10]

    app = Starlette(
        routes=[
            Route("/", lambda r: StreamingResponse(chunks(), media_type="text/html")),
            Route("/other.html", lambda r: HTMLResponse(PAGE.decode())),
            Route("/data", lambda r: JSONResponse({"accept": r.headers.get("accept-encoding")})),
        ]
    )
    app.add_middleware(SecurityHeaders)
    return TestClient(app)


def test_the_page_gets_its_hashes_and_every_response_the_headers() -> None:
    client = _client()
    page = client.get("/")
    assert page.content == PAGE
    assert page.headers["content-security-policy"] == page_policy(PAGE)
    other = client.get("/other.html")  # HTML elsewhere: no inline script may run
    data = client.get("/data", headers={"Accept-Encoding": "br, gzip"})
    for answer in (other, data):
        assert answer.headers["content-security-policy"] == page_policy()
    for answer in (page, other, data):
        for name, value in SECURITY_HEADERS.items():
            assert answer.headers[name] == value
    assert data.json() == {"accept": None}  # the app sees no Accept-Encoding: plain HTML
