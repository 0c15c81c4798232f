"""One user's events waiting in gradio's queue are bounded (QUEUE_MAX_PER_USER): a script
of one user cannot fill the queue and leave every other user "busy".

A live server with login on, its answers slowed (the shared "answer" slot takes one at a
time); bob sends questions through gradio's own client, and through its HTTP API, until
his are refused, and alice is still taken meanwhile.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from gradio_client import Client

from ragloom_app.app import BaseApp
from tests.helpers.api_server import served
from tests.helpers.scripted_app import scripted_app

PASSWORD = "correct horse battery"
QUESTION = ("How hot does the reactor run?", "fullqa", None)
REFUSED = (429, "2 of your requests are waiting already: let them end")
SLOW = {
    "slow": {
        "class": "tests.helpers.misbehaving_llms.SlowLLM",
        "replies": ["The Zorblax reactor runs at 451 kelvin [1]."],
        "delay": 0.25,
    }
}


def _serve(tmp_path: Path, **settings: Any) -> Iterator[tuple[str, BaseApp]]:
    docs = {"r.md": "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin.\n"}
    app = scripted_app(tmp_path, SLOW, docs, queue_max_per_user=2, **settings)
    for name in ("alice", "bob"):
        app.accounts.add_user(name, PASSWORD)
    with served(app) as url:
        yield url, app


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, BaseApp]]:
    yield from _serve(tmp_path, require_login=True)


def _cookie(url: str, name: str) -> str:
    """The session cookie of ``name``'s login through the form."""
    browser = httpx.Client(base_url=url, headers={"Origin": url.rstrip("/")}, timeout=30)
    found = re.search(r'name="csrf" value="([^"]+)"', browser.get("/login").text)
    assert found
    browser.post("/login", data={"name": name, "password": PASSWORD, "csrf": found[1]})
    return "; ".join(f"{k}={v}" for k, v in browser.cookies.items())


def _client(url: str, name: str | None) -> Client:
    headers = {"Cookie": _cookie(url, name)} if name else {}
    return Client(url, headers=headers, verbose=False)


def _refusal(job: Any) -> tuple[int, str] | None:
    """How ``job`` was refused at the door, or ``None`` if it was taken."""
    try:
        job.result(timeout=60)
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code, exc.response.text
    return None


def test_one_users_waiting_questions_are_bounded_and_others_are_taken(
    server: tuple[str, BaseApp],
) -> None:
    url, _ = server
    # A page session each (one client's jobs take turns in its session).
    bobs, alice = [_client(url, "bob") for _ in range(6)], _client(url, "alice")
    jobs = [bob.submit(*QUESTION, api_name="/ask") for bob in bobs]
    deadline = time.monotonic() + 30
    while sum(job.done() for job in jobs) < 3:  # refused ones end at once
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # While his wait, alice's question is taken (it waits its turn behind them).
    assert "451 kelvin" in str(alice.predict(*QUESTION, api_name="/ask"))
    refused = [r for r in map(_refusal, jobs) if r is not None]
    # Two waiting (and one running, if it had started by then): the rest of his were
    # refused at once, in words.
    assert len(refused) in (3, 4) and set(refused) == {REFUSED}, refused


def test_the_api_routes_that_queue_an_event_count_alike(server: tuple[str, BaseApp]) -> None:
    url, _ = server
    params = _client(url, "bob").view_api(return_format="dict", print_info=False)
    defaults = [p.get("parameter_default") for p in params["named_endpoints"]["/ask"]["parameters"]]
    body = {"data": [*QUESTION, *defaults[len(QUESTION) :]]}
    bob = httpx.Client(base_url=url, headers={"Cookie": _cookie(url, "bob")}, timeout=30)
    answers = [bob.post("/gradio_api/call/ask", json=body) for _ in range(6)]
    statuses = [answer.status_code for answer in answers]
    assert statuses.count(429) in (3, 4) and set(statuses) <= {200, 429}, statuses
    refused = next(answer for answer in answers if answer.status_code == 429)
    assert refused.text == REFUSED[1]
    # The routes that would call the function outside the queue, past every bound of it,
    # are closed.
    for route in ("run", "api"):
        assert bob.post(f"/gradio_api/{route}/ask", json=body).status_code == 404, route


@pytest.fixture
def local_server(tmp_path: Path) -> Iterator[tuple[str, BaseApp]]:
    yield from _serve(tmp_path)


def test_without_login_everyone_is_the_local_user_and_shares_the_whole_queue(
    local_server: tuple[str, BaseApp],
) -> None:
    url, _ = local_server
    clients = [_client(url, None) for _ in range(5)]
    jobs = [client.submit(*QUESTION, api_name="/ask") for client in clients]
    assert [_refusal(job) for job in jobs] == [None] * 5
