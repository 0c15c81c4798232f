"""The web UI's login: a ``/login`` page, ``/logout``, and who each UI request acts for.

The page is a plain HTML form (no script), posted back to ``/login``; a good name and
password set the same session cookie the HTTP API's ``POST /api/v1/login`` sets
(:data:`~ragloom_app.api.auth.SESSION_COOKIE`) and go on to the UI. Both forms carry a
token against cross-site request forgery, besides the guards every request passes (the
host guard refuses a POST whose ``Origin`` is another site's, and the session cookie is
``SameSite=Strict``):

- the login form's token is a random value also set as a cookie, and the two must match
  (a page of another site can send neither);
- the logout form's token is derived from the session's own secret
  (:func:`logout_token`), so only a page that the session's user was shown knows it.

:func:`ui_user_id` is the gradio mount's ``auth_dependency``: gradio refuses (401) every
event, upload and file of a request it returns ``None`` for, and gives the rest the id in
``gr.Request.username``. :class:`LoginRedirect` sends a browser that opens the page
without a session to the login page instead of gradio's bare 401.
"""

from __future__ import annotations

import hashlib
import html
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.types import ASGIApp, Receive, Scope, Send

from ragloom_app.accounts import LoginRefused
from ragloom_app.accounts.passwords import MAX_PASSWORD_CHARS
from ragloom_app.api.auth import (
    SESSION_COOKIE,
    cookie_is_secure,
    end_session_cookie,
    set_session_cookie,
)
from ragloom_app.api.client_address import proxy_networks, request_address
from ragloom_app.app import BaseApp
from ragloom_app.db.models import LOCAL_USER

__all__ = [
    "LOGIN_CSRF_COOKIE",
    "LoginRedirect",
    "UserLookup",
    "login_router",
    "logout_token",
    "ui_user_id",
]

logger = logging.getLogger(__name__)

LOGIN_CSRF_COOKIE = "ragloom_login_csrf"
_MAX_NAME_CHARS = 64

_STYLE = """
body{font-family:system-ui,sans-serif;background:#f1f5f9;color:#0f172a;margin:0}
main{max-width:22rem;margin:12vh auto;padding:2rem;background:#fff;border-radius:12px;
box-shadow:0 1px 3px #0002}
h1{margin:0 0 .25rem;color:#4338ca}p{margin:.25rem 0 1.25rem;color:#475569}
label{display:block;margin:.75rem 0 .25rem;font-weight:600}
input{width:100%;box-sizing:border-box;padding:.55rem;border:1px solid #cbd5e1;border-radius:8px;
font-size:1rem}
button{margin-top:1.25rem;width:100%;padding:.6rem;border:0;border-radius:8px;background:#4f46e5;
color:#fff;font-size:1rem;font-weight:600;cursor:pointer}
.error{padding:.6rem;border-radius:8px;background:#fee2e2;color:#991b1b}
.note{padding:.6rem;border-radius:8px;background:#e0e7ff;color:#3730a3}
"""


def logout_token(session_token: str) -> str:
    """The logout form's anti-forgery token of a session (derived from its secret)."""
    return hashlib.sha256(b"ragloom-logout\0" + session_token.encode()).hexdigest()[:32]


UserLookup = Callable[[Request], Awaitable[str | None]]
"""Names a request's user, or ``None`` (it must log in): awaited on the event loop."""


def ui_user_id(app: BaseApp) -> UserLookup:
    """The gradio ``auth_dependency``: the id of the request's user, or ``None`` (refused).

    A live session names its user. Without one the request is the local user's unless
    login is required; a session cookie that is sent but has ended is refused either way
    (as the API does), so the browser is sent to log in again. The session is read from
    the database in the thread pool, never on the server's event loop.
    """

    def lookup(request: Request) -> str | None:
        token = request.cookies.get(SESSION_COOKIE)
        if token:
            user = app.accounts.session_user(token)
            return user.id if user is not None else None
        return None if app.settings.require_login else LOCAL_USER

    async def user_id(request: Request) -> str | None:
        return await run_in_threadpool(lookup, request)

    return user_id


class LoginRedirect:
    """ASGI middleware: a page load of ``/`` that ``user_id`` refuses goes to ``/login``."""

    def __init__(self, app: ASGIApp, user_id: UserLookup) -> None:
        self.app = app
        self.user_id = user_id

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        is_page_load = scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == "/"
        if is_page_load and await self.user_id(Request(scope)) is None:
            await RedirectResponse("/login", status_code=303)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _page(*, csrf: str, name: str = "", message: str = "", kind: str = "error") -> str:
    notice = f'<p class="{kind}" role="alert">{html.escape(message)}</p>' if message else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Log in · Ragloom</title><style>{_STYLE}</style></head>
<body><main>
<h1>Ragloom</h1><p>Log in to chat with your documents.</p>
{notice}
<form method="post" action="/login">
<input type="hidden" name="csrf" value="{html.escape(csrf)}">
<label for="name">Name</label>
<input id="name" name="name" autocomplete="username" required maxlength="{_MAX_NAME_CHARS}"
 value="{html.escape(name)}" autofocus>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required
 maxlength="{MAX_PASSWORD_CHARS}">
<button type="submit">Log in</button>
</form>
</main></body></html>"""


def _login_page(
    request: Request,
    *,
    secure: bool,
    status: int = 200,
    name: str = "",
    message: str = "",
    kind: str = "error",
) -> HTMLResponse:
    """The form with a fresh anti-forgery token, set as a cookie too."""
    csrf = secrets.token_urlsafe(24)
    response = HTMLResponse(
        _page(csrf=csrf, name=name, message=message, kind=kind), status_code=status
    )
    response.set_cookie(
        LOGIN_CSRF_COOKIE,
        csrf,
        max_age=3600,
        httponly=True,
        samesite="strict",
        secure=cookie_is_secure(request, secure),
        path="/login",
    )
    response.headers["Cache-Control"] = "no-store"
    return response


def _field(form: FormData, name: str) -> str:
    value = form.get(name)
    return value if isinstance(value, str) else ""  # an upload where text belongs: none


def _same(sent: str, expected: str) -> bool:
    """Whether two tokens are equal, in constant time (any text: compared as bytes)."""
    return (
        bool(sent) and bool(expected) and secrets.compare_digest(sent.encode(), expected.encode())
    )


def login_router(app: BaseApp) -> APIRouter:
    proxies = proxy_networks(app.settings.trusted_proxies)
    router = APIRouter(include_in_schema=False)

    secure = app.settings.secure_cookies

    def page(request: Request, **shown: Any) -> HTMLResponse:
        return _login_page(request, secure=secure, **shown)

    @router.get("/login")
    def login_form(request: Request, ended: str = "") -> Response:
        token = request.cookies.get(SESSION_COOKIE)
        live = bool(token) and app.accounts.session_user(token or "") is not None
        if live:
            return RedirectResponse("/", status_code=303)  # already logged in
        if token and not app.settings.require_login:
            # An ended session, where nobody must log in: the page is the local user's
            # again (the cookie could be another Ragloom's, on another port).
            response: Response = RedirectResponse("/", status_code=303)
        else:
            message = "You are logged out." if ended else ""
            response = page(request, message=message, kind="note")
        if token:
            end_session_cookie(response)  # a dead cookie would send every page here
        return response

    @router.post("/login")
    async def login(request: Request) -> Response:
        form = await request.form(max_files=0, max_fields=8)
        name = _field(form, "name").strip()[:_MAX_NAME_CHARS]
        password = _field(form, "password")
        if not _same(_field(form, "csrf"), request.cookies.get(LOGIN_CSRF_COOKIE, "")):
            return page(request, status=403, name=name, message="The form expired: log in again.")
        if not name or not password or len(password) > MAX_PASSWORD_CHARS:
            return page(request, status=401, name=name, message="Type a name and password.")
        address = request_address(request, proxies)
        try:
            # argon2 and the database: in a thread, not on the event loop.
            user, token = await run_in_threadpool(app.accounts.login, name, password, address)
        except LoginRefused as exc:
            status = 429 if exc.retry_after > 0 else 401
            refused = page(request, status=status, name=name, message=f"{exc}.")
            if status == 429:
                refused.headers["Retry-After"] = str(int(exc.retry_after) + 1)
            return refused
        logger.info("UI: %s logged in", user.name)
        response = RedirectResponse("/", status_code=303)
        set_session_cookie(response, request, token, always_secure=secure)
        response.delete_cookie(LOGIN_CSRF_COOKIE, path="/login")
        return response

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        form = await request.form(max_files=0, max_fields=4)
        token = request.cookies.get(SESSION_COOKIE, "")
        # Ending a session needs its token; forgetting a cookie whose session has ended
        # does not (it changes nothing but the browser's own cookie).
        if token and await run_in_threadpool(app.accounts.session_user, token) is not None:
            if not _same(_field(form, "csrf"), logout_token(token)):
                return HTMLResponse("The logout form expired: reload the page.", status_code=403)
            await run_in_threadpool(app.accounts.logout, token)
        response = RedirectResponse("/login?ended=1", status_code=303)
        end_session_cookie(response)
        return response

    return router
