"""One user's events waiting in gradio's queue are bounded (QUEUE_MAX_PER_USER): a script
of one user cannot fill the queue and leave every other user "busy".

A live server with login on, its answers slowed (the shared "answer" slot takes one at a
time); bob sends questions through gradio's own client until his are refused, and alice
is still served.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from gradio_client import Client

from ragloom_app.app import BaseApp
from ragloom_app.ui.server import serve
from tests.helpers.ports import free_port
from tests.helpers.scripted_app import scripted_app

PASSWORD = "correct horse battery"
SLOW = {
    "slow": {
        "class": "tests.helpers.misbehaving_llms.SlowLLM",
        "replies": ["The Zorblax reactor runs at 451 kelvin [1]."],
        "delay": 0.25,
    }
}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, BaseApp]]:
    docs = {"r.md": "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin.\n"}
    app = scripted_app(tmp_path, SLOW, docs, require_login=True, queue_max_per_user=2)
    for name in ("alice", "bob"):
        app.accounts.add_user(name, PASSWORD)
    port = free_port()
    running = serve(app, port=port, first_run_docs=False, block=False, warm_up=False)
    try:
        yield f"http://127.0.0.1:{port}/", app
    finally:
        running.close()


def _client(url: str, name: str) -> Client:
    """Gradio's client, with the session cookie of ``name``'s login."""
    browser = httpx.Client(base_url=url, headers={"Origin": url.rstrip("/")}, timeout=30)
    found = re.search(r'name="csrf" value="([^"]+)"', browser.get("/login").text)
    assert found
    browser.post("/login", data={"name": name, "password": PASSWORD, "csrf": found[1]})
    cookie = "; ".join(f"{k}={v}" for k, v in browser.cookies.items())
    return Client(url, headers={"Cookie": cookie}, verbose=False)


def test_one_users_waiting_questions_are_bounded_and_others_are_served(
    server: tuple[str, BaseApp],
) -> None:
    url, _ = server
    # A page session each (one client's jobs take turns in its session).
    bobs, alice = [_client(url, "bob") for _ in range(6)], _client(url, "alice")
    question = ("How hot does the reactor run?", "fullqa", None)
    jobs = [bob.submit(*question, api_name="/ask") for bob in bobs]
    refused = []
    for job in jobs:
        try:
            job.result(timeout=60)
        except httpx.HTTPStatusError as exc:
            refused.append((exc.response.status_code, exc.response.text))
    # Two waiting (and one running, if it had started by then): the rest of his were
    # refused at once, in words.
    assert len(refused) in (3, 4), refused
    assert set(refused) == {(429, "2 of your requests are waiting already: let them end")}
    started = time.monotonic()
    while not all(job.done() for job in jobs):
        assert time.monotonic() - started < 60
        time.sleep(0.1)
    answer = alice.predict(*question, api_name="/ask")
    assert "451 kelvin" in str(answer)
