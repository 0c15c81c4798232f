"""The request guard: URL-fetching routes and inputs, body sizes, on a bare ASGI app."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from ragloom_app.web.requests import RequestGuard, fetches_url


async def _echo(request: Request) -> PlainTextResponse:
    return PlainTextResponse(f"{request.method} {len(await request.body())}")


def _client() -> TestClient:
    app = Starlette(routes=[Route("/{path:path}", _echo, methods=["GET", "POST", "HEAD"])])
    app.add_middleware(RequestGuard, max_request_bytes=1000, max_upload_request_bytes=5000)
    return TestClient(app)


@pytest.mark.parametrize(
    "data",
    [
        {"path": "https://example.com/x"},
        [[{"orig_name": "a", "path": "HTTP://example.com"}]],
        {"data": [None, {"path": " ftp://example.com/x", "meta": {}}]},
    ],
)
def test_a_file_named_by_url_is_found(data: object) -> None:
    assert fetches_url(data)


def test_local_paths_and_urls_elsewhere_are_not_fetching() -> None:
    upload = {"path": "/tmp/gradio/abc/a.md", "url": "http://127.0.0.1:7860/gradio_api/file=x"}
    assert not fetches_url({"data": ["https://example.com in a question", [upload]]})


def test_deep_nesting_does_not_exhaust_the_stack() -> None:
    deep: object = {"path": "https://example.com"}
    for _ in range(100_000):
        deep = [deep]
    assert fetches_url(deep)


@pytest.mark.parametrize(
    "path",
    [
        "/gradio_api/file=https://example.com/x",
        "/gradio_api/file=file:///etc/passwd",
        "/gradio_api/file/http://example.com/x",
        "/gradio_api/proxy=https://a.hf.space/",
    ],
)
def test_fetching_routes_are_refused(path: str) -> None:
    answer = _client().get(path)
    assert answer.status_code == 403
    assert "does not fetch addresses" in answer.text


def test_bodies() -> None:
    client = _client()
    assert client.get("/gradio_api/file=/tmp/gradio/a.md").text == "GET 0"
    assert client.post("/gradio_api/queue/join", json={"data": ["hello"]}).status_code == 200
    refused = client.post("/gradio_api/queue/join", json={"data": [{"path": "https://x.y/"}]})
    assert refused.status_code == 403
    assert client.post("/gradio_api/queue/join", content=b"[" * 900).status_code == 200
    too_long = client.post("/gradio_api/queue/join", content=b"x" * 1001)
    assert too_long.status_code == 413
    assert "at most 1000 bytes (MAX_REQUEST_BYTES)" in too_long.text
    upload = client.post("/gradio_api/upload", files={"files": ("a.txt", b"x" * 4000)})
    assert upload.text.startswith("POST ")
    big = client.post("/gradio_api/upload", files={"files": ("a.txt", b"x" * 6000)})
    assert big.status_code == 413
    assert "(MAX_UPLOAD_REQUEST_BYTES)" in big.text
    # A body on a GET is held to the same limit: it was passed on unread, and the API's
    # text guard then read it whole, before the login was checked.
    sent = {"Content-Type": "application/json"}
    assert (
        client.request("GET", "/api/v1/health", content=b"x" * 1001, headers=sent).status_code
        == 413
    )
    assert client.request("GET", "/api/v1/health", content=b"{}", headers=sent).text == "GET 2"


def test_an_upload_that_would_fill_the_disk_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import shutil

    free = shutil.disk_usage(tmp_path).free

    def client(min_free: int) -> TestClient:
        app = Starlette(routes=[Route("/{path:path}", _echo, methods=["POST"])])
        app.add_middleware(
            RequestGuard,
            max_request_bytes=1000,
            max_upload_request_bytes=5000,
            upload_dir=tmp_path / "uploads",  # not created yet: its parent's disk counts
            min_free_disk_bytes=min_free,
        )
        return TestClient(app)

    files = {"files": ("a.txt", b"x" * 100)}
    assert client(1).post("/gradio_api/upload", files=files).status_code == 200
    refused = client(free + 1024**4).post("/gradio_api/upload", files=files)
    assert refused.status_code == 507
    assert "would leave less than" in refused.text and "(MIN_FREE_DISK_BYTES)" in refused.text
