"""The web UI's login page, logout and the gate in front of gradio, on a live server.

Served as ``ragloom serve`` serves it (real SQLite, argon2id, uvicorn), with login on; a
real HTTP client (httpx) plays the browser: it keeps cookies and sends the Origin a
browser sends with a form.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ragloom_app.accounts.store import MAX_FAILED_LOGINS
from ragloom_app.api.auth import SESSION_COOKIE
from ragloom_app.app import BaseApp
from ragloom_app.web.login import LOGIN_CSRF_COOKIE, logout_token
from tests.helpers.api_server import replay_app, served

PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, BaseApp]]:
    app = replay_app(tmp_path_factory.mktemp("login"), require_login=True)
    for name in ("alice", "mallory", "limited"):
        app.accounts.add_user(name, PASSWORD)
    with served(app) as url:
        yield url, app


def _browser(url: str) -> httpx.Client:
    # A browser names the page's origin on a form POST; the host guard checks it.
    return httpx.Client(base_url=url, headers={"Origin": url.rstrip("/")}, timeout=30)


def _csrf(page: httpx.Response) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


def _log_in(client: httpx.Client, name: str, password: str = PASSWORD) -> httpx.Response:
    form = client.get("/login")
    return client.post("/login", data={"name": name, "password": password, "csrf": _csrf(form)})


def test_the_page_sends_a_browser_without_a_session_to_log_in(server: tuple[str, BaseApp]) -> None:
    url, _ = server
    with _browser(url) as client:
        page = client.get("/")
        assert page.status_code == 303 and page.headers["location"] == "/login"
        form = client.get("/login")
    assert form.status_code == 200
    assert '<form method="post" action="/login">' in form.text and "<script" not in form.text
    assert "default-src 'none'" in form.headers["content-security-policy"]
    assert form.headers["cache-control"] == "no-store"
    cookie = form.headers["set-cookie"]
    assert cookie.startswith(f"{LOGIN_CSRF_COOKIE}=") and "HttpOnly" in cookie
    assert "SameSite=strict" in cookie


@pytest.mark.parametrize(
    "path", ["/config", "/gradio_api/info", "/gradio_api/upload", "/gradio_api/queue/join"]
)
def test_gradio_refuses_every_request_without_a_session(
    server: tuple[str, BaseApp], path: str
) -> None:
    url, _ = server
    with _browser(url) as client:
        method = client.post if path.endswith(("upload", "join")) else client.get
        assert method(path).status_code == 401


def test_a_good_login_opens_the_ui_and_a_wrong_one_says_so(server: tuple[str, BaseApp]) -> None:
    url, _ = server
    with _browser(url) as client:
        wrong = _log_in(client, "alice", "not the password")
        assert wrong.status_code == 401
        assert "the name or the password is not right" in wrong.text
        assert 'value="alice"' in wrong.text  # the name is kept, never the password
        assert "not the password" not in wrong.text
        assert SESSION_COOKIE not in client.cookies
        right = _log_in(client, "alice")
        assert right.status_code == 303 and right.headers["location"] == "/"
        cookie = right.headers.get_list("set-cookie")
        session = next(c for c in cookie if c.startswith(SESSION_COOKIE))
        assert "HttpOnly" in session and "SameSite=strict" in session
        assert "Secure" not in session  # plain HTTP on loopback
        page = client.get("/")
        assert page.status_code == 200 and "<gradio-app" in page.text
        assert client.get("/config").status_code == 200
        # Logged in, the login page goes on to the UI.
        assert client.get("/login").headers["location"] == "/"


def test_a_login_form_without_its_token_is_refused(server: tuple[str, BaseApp]) -> None:
    url, _ = server
    with _browser(url) as client:
        missing = client.post("/login", data={"name": "alice", "password": PASSWORD})
        assert missing.status_code == 403 and "The form expired" in missing.text
        client.get("/login")
        forged = client.post(
            "/login", data={"name": "alice", "password": PASSWORD, "csrf": "made-up"}
        )
        assert forged.status_code == 403
        assert SESSION_COOKIE not in client.cookies


def test_another_sites_form_is_refused_before_it_is_read(server: tuple[str, BaseApp]) -> None:
    url, _ = server
    with httpx.Client(base_url=url, headers={"Origin": "https://evil.example"}) as client:
        answer = client.post("/login", data={"name": "alice", "password": PASSWORD})
    assert answer.status_code == 403 and SESSION_COOKIE not in answer.headers.get("set-cookie", "")


def test_logout_needs_its_token_then_ends_the_session(server: tuple[str, BaseApp]) -> None:
    url, app = server
    with _browser(url) as client:
        _log_in(client, "mallory")
        token = client.cookies[SESSION_COOKIE]
        forged = client.post("/logout", data={"csrf": "0" * 32})
        assert forged.status_code == 403
        assert app.accounts.session_user(token) is not None  # still logged in
        done = client.post("/logout", data={"csrf": logout_token(token)})
        assert done.status_code == 303 and done.headers["location"] == "/login?ended=1"
        assert app.accounts.session_user(token) is None
        assert "You are logged out." in client.get("/login?ended=1").text
        assert client.get("/").status_code == 303  # the page wants a login again
    # An old cookie sent again is no session either.
    with _browser(url) as replay:
        replay.cookies.set(SESSION_COOKIE, token)
        assert replay.get("/").headers["location"] == "/login"
        assert replay.get("/config").status_code == 401


def test_failed_logins_are_limited_per_account(server: tuple[str, BaseApp]) -> None:
    url, _ = server
    with _browser(url) as client:
        for _ in range(MAX_FAILED_LOGINS):
            assert _log_in(client, "limited", "wrong password").status_code == 401
        limited = _log_in(client, "limited")  # even the right password now waits
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) > 0
    assert "too many failed logins" in limited.text


def test_an_oversized_password_is_refused_without_hashing_it(server: tuple[str, BaseApp]) -> None:
    url, _ = server
    with _browser(url) as client:
        answer = _log_in(client, "alice", "x" * 5000)
    assert answer.status_code == 401 and "Type a name and password" in answer.text


def test_without_login_the_page_is_the_local_users(tmp_path: Path) -> None:
    app = replay_app(tmp_path)
    with served(app) as url, _browser(url) as client:
        page = client.get("/")
        assert page.status_code == 200 and "<gradio-app" in page.text
        assert client.get("/config").status_code == 200


@pytest.mark.parametrize("path", ["/login", "/logout"])
def test_a_token_of_any_text_is_refused_in_words_never_a_500(
    server: tuple[str, BaseApp], path: str
) -> None:
    url, _ = server
    with _browser(url) as client:
        _log_in(client, "alice")
        client.cookies.set(LOGIN_CSRF_COOKIE, "x", path="/login")
        answer = client.post(path, data={"name": "alice", "password": PASSWORD, "csrf": "é\u202e"})
    assert answer.status_code == 403


def test_without_login_an_ended_sessions_cookie_is_forgotten(tmp_path: Path) -> None:
    # The cookie may be another Ragloom's, on another port of this machine: it must not
    # lock the local user out of its own page.
    app = replay_app(tmp_path)
    with served(app) as url, _browser(url) as client:
        client.cookies.set(SESSION_COOKIE, "ended-long-ago", domain="127.0.0.1")
        first = client.get("/")
        assert first.status_code == 303 and first.headers["location"] == "/login"
        forgotten = client.get("/login")
        assert forgotten.status_code == 303 and forgotten.headers["location"] == "/"
        assert SESSION_COOKIE not in client.cookies
        assert client.get("/").status_code == 200
        client.cookies.set(SESSION_COOKIE, "ended-again", domain="127.0.0.1")
        assert client.post("/logout", data={}).status_code == 303  # no token needed
        assert SESSION_COOKIE not in client.cookies


def test_secure_cookies_mark_the_session_secure_behind_a_tls_proxy(tmp_path: Path) -> None:
    app = replay_app(tmp_path, require_login=True, secure_cookies=True)
    app.accounts.add_user("alice", PASSWORD)
    with served(app) as url, _browser(url) as client:
        form = client.get("/login")
        assert "Secure" in form.headers["set-cookie"]
        # A client keeps a Secure cookie for HTTPS only: the proxy's side. Sent by hand here.
        csrf = _csrf(form)
        logged_in = client.post(
            "/login",
            data={"name": "alice", "password": PASSWORD, "csrf": csrf},
            headers={"Cookie": f"{LOGIN_CSRF_COOKIE}={csrf}"},
        )
    session = next(
        c for c in logged_in.headers.get_list("set-cookie") if c.startswith(SESSION_COOKIE)
    )
    assert "Secure" in session
