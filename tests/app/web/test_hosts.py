"""Loopback names and the Host and Origin checks of the web app, on a bare ASGI app."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from ragloom_app.web.hosts import HostGuard, UnsafeHostError, check_serving_host, is_loopback


@pytest.mark.parametrize(
    "host",
    ["localhost", "LocalHost", "127.0.0.1", "127.8.9.10", "::1", "[::1]", "::ffff:127.0.0.1"],
)
def test_loopback_serves_without_login(host: str) -> None:
    assert is_loopback(host)
    check_serving_host(host, login_required=False, accounts=0)


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "ragloom.lan", "localhost.", "", "[::2]"]
)
def test_any_other_address_needs_an_account(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(UnsafeHostError, match=r"requires login.*ragloom users add NAME --admin"):
        check_serving_host(host, login_required=True, accounts=0)
    check_serving_host(host, login_required=True, accounts=1)


def test_login_on_loopback_needs_an_account_too() -> None:
    with pytest.raises(UnsafeHostError, match=r"login is required \(REQUIRE_LOGIN\)"):
        check_serving_host("127.0.0.1", login_required=True, accounts=0)
    check_serving_host("127.0.0.1", login_required=True, accounts=2)


def _client(**guard: object) -> TestClient:
    app = Starlette(routes=[Route("/", lambda r: PlainTextResponse("ok"), methods=["GET", "POST"])])
    app.add_middleware(HostGuard, **guard)
    return TestClient(app, base_url="http://127.0.0.1:7860")


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("127.0.0.1:7860", 200),
        ("localhost", 200),
        ("[::1]:7860", 200),
        ("ragloom.lan", 400),
        ("ragloom.lan:7860", 400),
        ("127.0.0.1@evil.example", 400),
        ("evil.example#127.0.0.1", 400),
        ("127.0.0.1:99999999", 400),
        ("", 400),
    ],
)
def test_host_header(host: str, status: int) -> None:
    answer = _client().get("/", headers={"Host": host})
    assert answer.status_code == status
    if status == 400:
        assert "answers only to 127.0.0.1, [::1], localhost" in answer.text


def test_allowed_hosts_are_served() -> None:
    client = _client(allowed_hosts=["Ragloom.LAN", "[fd00::5]"])
    assert client.get("/", headers={"Host": "ragloom.lan:443"}).status_code == 200
    assert client.get("/", headers={"Host": "[fd00::5]:7860"}).status_code == 200
    assert client.get("/", headers={"Host": "other.lan"}).status_code == 400


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        (None, 200),
        ("http://127.0.0.1:7860", 200),
        ("http://evil.example", 403),
        ("http://localhost:7860", 403),  # another origin, though the same machine
        ("http://127.0.0.1:8000", 403),
        ("null", 403),
        ("http://[::1", 403),
    ],
)
def test_origin_of_a_request(origin: str | None, status: int) -> None:
    headers = {"Host": "127.0.0.1:7860", **({"Origin": origin} if origin else {})}
    client = _client()
    assert client.post("/", headers=headers).status_code == status
    # Reads too: gradio would let another origin read the answer through CORS.
    assert client.get("/", headers=headers).status_code == status


def test_a_proxys_public_name_may_send_requests() -> None:
    # A reverse proxy that rewrites Host: its pages' Origin is the name the admin allowed.
    client = _client(allowed_hosts=["ragloom.example"], allowed_origins=["ragloom.example"])
    headers = {"Host": "127.0.0.1:7860", "Origin": "https://ragloom.example"}
    assert client.post("/", headers=headers).status_code == 200
    other = {"Host": "127.0.0.1:7860", "Origin": "https://other.example"}
    assert client.post("/", headers=other).status_code == 403
    # Only at its own default port: another port of that host is another server.
    elsewhere = {"Host": "127.0.0.1:7860", "Origin": "https://ragloom.example:9999"}
    assert client.post("/", headers=elsewhere).status_code == 403


def test_a_loopback_name_allowed_for_a_proxy_never_lets_other_local_pages_in() -> None:
    client = _client(allowed_hosts=["localhost"], allowed_origins=["localhost"])
    local_page = {"Host": "127.0.0.1:7860", "Origin": "http://localhost"}
    assert client.post("/", headers=local_page).status_code == 403


def test_a_websocket_from_another_site_is_closed() -> None:
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocket, WebSocketDisconnect

    async def echo(socket: WebSocket) -> None:
        await socket.accept()
        await socket.send_text("open")
        await socket.close()

    app = Starlette(routes=[WebSocketRoute("/ws", echo)])
    app.add_middleware(HostGuard)
    client = TestClient(app, base_url="http://127.0.0.1:7860")
    own = {"Host": "127.0.0.1:7860", "Origin": "http://127.0.0.1:7860"}
    with client.websocket_connect("/ws", headers=own) as socket:
        assert socket.receive_text() == "open"
    foreign = {**own, "Origin": "http://evil.example"}
    with (
        pytest.raises(WebSocketDisconnect) as refused,
        client.websocket_connect("/ws", headers=foreign),
    ):
        pass
    assert refused.value.code == 1008
