"""A gradio page session is its user's: another user naming its hash is refused.

On a live server with login on (as ``ragloom serve`` serves it), alice and bob logged in
through the login form; each drives gradio's own routes as a script could, naming the
session hash her page uses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ragloom_app.app import BaseApp
from ragloom_app.web.gradio_sessions import (
    MAX_BOUND_SESSIONS,
    MAX_SESSIONS_PER_USER,
    SessionBinding,
)
from tests.helpers.api_server import replay_app, served

PASSWORD = "correct horse battery"
ALICES = "alicesess01"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, BaseApp]]:
    app = replay_app(tmp_path_factory.mktemp("sessions"), require_login=True)
    for name in ("alice", "bob"):
        app.accounts.add_user(name, PASSWORD)
    with served(app) as url:
        yield url, app


def _logged_in(url: str, name: str) -> httpx.Client:
    client = httpx.Client(base_url=url, headers={"Origin": url.rstrip("/")}, timeout=30)
    form = client.get("/login").text
    found = re.search(r'name="csrf" value="([^"]+)"', form)
    assert found
    done = client.post("/login", data={"name": name, "password": PASSWORD, "csrf": found[1]})
    assert done.status_code == 303
    return client


def _load_event(client: httpx.Client) -> int:
    """The index of a page-load event that takes no input (the plugin table's)."""
    config = client.get("/config").json()
    for index, dependency in enumerate(config["dependencies"]):
        loads = bool(dependency["targets"]) and dependency["targets"][0][1] == "load"
        if loads and not dependency["inputs"]:
            return index
    raise AssertionError("no page-load event without inputs")


def _join(client: httpx.Client, fn_index: int, session: str) -> httpx.Response:
    body: dict[str, Any] = {"data": [], "fn_index": fn_index, "session_hash": session}
    return client.post("/gradio_api/queue/join", json=body)


def test_a_session_hash_serves_the_user_who_used_it_first(server: tuple[str, Any]) -> None:
    url, _ = server
    alice, bob = _logged_in(url, "alice"), _logged_in(url, "bob")
    event = _load_event(alice)
    assert _join(alice, event, ALICES).status_code == 200
    with alice.stream("GET", "/gradio_api/queue/data", params={"session_hash": ALICES}) as s:
        assert s.status_code == 200
        for line in s.iter_lines():
            if line.startswith("data:") and json.loads(line[5:]).get("msg") in (
                "process_completed",
                "close_stream",
            ):
                break
    # Bob names her page's session: to read its stream, to send it events, to cancel.
    assert bob.get("/gradio_api/queue/data", params={"session_hash": ALICES}).status_code == 403
    assert _join(bob, event, ALICES).status_code == 403
    cancel = {"session_hash": ALICES, "fn_index": event, "event_id": "x"}
    assert bob.post("/gradio_api/cancel", json=cancel).status_code == 403
    assert bob.get(f"/gradio_api/heartbeat/{ALICES}").status_code == 403
    # However its JSON body is labelled or padded.
    body = {"data": [], "fn_index": event, "session_hash": ALICES}
    for label in ("Application/JSON", "application/vnd.x+json; charset=utf-8", "text/plain"):
        sent = bob.post(
            "/gradio_api/queue/join", content=json.dumps(body), headers={"Content-Type": label}
        )
        assert sent.status_code == 403, label
    # Or with one of his own in the query, which gradio does not read on this route.
    for own in ("bobsess0001", ALICES + "&session_hash=bobsess0001"):
        sent = bob.post(f"/gradio_api/queue/join?session_hash={own}", json=body)
        assert sent.status_code == 403, own
    two = "/gradio_api/queue/data?session_hash=bobsess0001&session_hash=" + ALICES
    assert bob.get(two).status_code == 403
    # Her hash in a media stream's path; a form (gradio reads a session from its fields
    # on component_server), which goes to the upload route only.
    assert bob.get(f"/gradio_api/stream/{ALICES}/0/1/playlist.m3u8").status_code == 403
    form = {"session_hash": ALICES, "component_id": "1", "fn_name": "x", "data": "[]"}
    sent = bob.post("/gradio_api/component_server", files={"file": ("a", b"x")}, data=form)
    assert sent.status_code == 415
    padded = {**body, "data": ["x" * 300_000]}
    assert bob.post("/gradio_api/queue/join", json=padded).status_code == 413
    nested = "[" * 5000 + "]" * 5000  # past Python's stack: not JSON gradio reads either
    sent = bob.post(
        "/gradio_api/queue/join", content=nested, headers={"Content-Type": "application/json"}
    )
    assert sent.status_code < 500
    # His own sessions work as ever.
    assert _join(bob, event, "bobsess0001").status_code == 200


@pytest.mark.parametrize(
    "path",
    ["/gradio_api/deep_link?session_hash=" + ALICES, "/config?deep_link=abc", "/?deep_link=x"],
)
def test_deep_links_are_not_served(server: tuple[str, Any], path: str) -> None:
    url, _ = server
    assert _logged_in(url, "bob").get(path).status_code == 404


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/gradio_api/cancel"),
        ("POST", "/gradio_api/reset"),
        ("GET", "/gradio_api/heartbeat/x"),
    ],
)
def test_every_gradio_route_wants_a_login(server: tuple[str, Any], method: str, path: str) -> None:
    url, _ = server
    with httpx.Client(base_url=url, headers={"Origin": url.rstrip("/")}) as anonymous:
        answer = anonymous.request(method, path, json={"session_hash": "x", "event_id": "x"})
    assert answer.status_code == 401


def test_one_users_sessions_never_push_out_anothers() -> None:
    """The table of owners is bounded; one user naming made-up sessions once pushed
    another's out, and whoever named that one next owned it. A user past its own bound
    forgets its own oldest."""
    binding = SessionBinding(lambda *args: None, user_id=lambda request: None)
    assert binding._bind(ALICES, "alice-id")
    for number in range(MAX_BOUND_SESSIONS):
        assert binding._bind(f"made-up-{number}", "bob-id")  # a heartbeat each
    assert not binding._bind(ALICES, "bob-id")
    assert binding._bind(ALICES, "alice-id")
    # Bob keeps his latest sessions; his oldest were forgotten (anyone may take them).
    assert binding._bind(f"made-up-{MAX_BOUND_SESSIONS - 1}", "bob-id")
    assert not binding._bind(f"made-up-{MAX_BOUND_SESSIONS - 1}", "carol-id")
    assert binding._bind("made-up-0", "carol-id")
    assert len(binding._owners) <= MAX_SESSIONS_PER_USER + 2
