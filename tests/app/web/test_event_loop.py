"""No request holds the server's event loop: while one waits on the database (or on argon2),
the process answers every other request.

A request that did its database work on the loop held every request of its process: an
upload whose job queue waited for PostgreSQL to come back stalled its process for 7 s
(docs/reliability.md). Here the slow call is held on purpose until the health check, sent
meanwhile, has been answered; on the loop, the health check would wait for it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from ragloom_app.api.auth import SESSION_COOKIE
from ragloom_app.app import BaseApp
from tests.helpers.api_server import replay_app, served

PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, BaseApp]]:
    app = replay_app(tmp_path_factory.mktemp("loop"), require_login=True)
    app.accounts.add_user("alice", PASSWORD)
    with served(app) as url:
        yield url.rstrip("/"), app


def _browser(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Origin": url}, timeout=60)


def _login_form(client: httpx.Client) -> dict[str, str]:
    found = re.search(r'name="csrf" value="([^"]+)"', client.get("/login").text)
    assert found
    return {"name": "alice", "password": PASSWORD, "csrf": found.group(1)}


def _logged_in(client: httpx.Client) -> httpx.Client:
    assert client.post("/login", data=_login_form(client)).status_code == 303
    assert client.cookies.get(SESSION_COOKIE)
    return client


def _upload(url: str, app: BaseApp) -> Callable[[], httpx.Response]:
    user = app.accounts.user_named("alice")
    assert user is not None
    _, key = app.accounts.create_key(user, "loop test")
    client = httpx.Client(
        base_url=f"{url}/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60
    )
    created = client.post("/indices", json={"name": "loop notes"})
    assert created.status_code in (201, 409)
    files = [("files", ("pumps.md", b"The pumps run at 40 rpm."))]
    return lambda: client.post("/indices/loop notes/files", files=files)


def _login(url: str, app: BaseApp) -> Callable[[], httpx.Response]:
    client = _browser(url)
    form = _login_form(client)
    return lambda: client.post("/login", data=form)


def _page_load(url: str, app: BaseApp) -> Callable[[], httpx.Response]:
    client = _logged_in(_browser(url))
    return lambda: client.get("/")


def _gradio_request(url: str, app: BaseApp) -> Callable[[], httpx.Response]:
    client = _logged_in(_browser(url))
    return lambda: client.get("/gradio_api/info")


def _gradio_config(url: str, app: BaseApp) -> Callable[[], httpx.Response]:
    client = _logged_in(_browser(url))
    return lambda: client.get("/config")  # gradio's own login check


# What each request waits on (held below), and how the request is made.
CASES: dict[str, tuple[str, str, Callable[[str, BaseApp], Callable[[], httpx.Response]]]] = {
    "an upload, its job queue waiting for the database": ("jobs", "submit_files", _upload),
    "a login, argon2 and the database": ("accounts", "login", _login),
    "a page load, its session read": ("accounts", "session_user", _page_load),
    "a gradio request, its session read": ("accounts", "session_user", _gradio_request),
    "gradio's own login check": ("accounts", "session_user", _gradio_config),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_server_answers_others_while_a_request_waits_on_the_database(
    server: tuple[str, BaseApp], case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, app = server
    owner, method, prepare = CASES[case]
    slow_request = prepare(url, app)  # logins and keys made before anything is held
    target = getattr(app, owner)
    original = getattr(target, method)
    entered, release = threading.Event(), threading.Event()

    def waiting(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        release.wait(60)
        return original(*args, **kwargs)

    monkeypatch.setattr(target, method, waiting)
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(slow_request)
        try:
            assert entered.wait(30), "the request never reached the slow call"
            health = httpx.get(f"{url}/api/v1/health", timeout=15)
            assert health.status_code == 200
        finally:
            release.set()
        assert held.result(timeout=60).status_code in (200, 202, 303)
