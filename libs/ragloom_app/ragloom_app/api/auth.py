"""Who an API request acts for: a login session's cookie, or an API key.

``Authorization: Bearer rlk_...`` names a user by one of its API keys; a browser's
session cookie (:data:`SESSION_COOKIE`, set by ``POST /api/v1/login``) by its session.
Without either, the request acts for the local user, unless ``REQUIRE_LOGIN`` is on: then
it is refused (401). A key or session that is sent but is not valid (revoked, expired,
its user disabled) is always refused (401): dropping it silently would let a revoked key
act as the local user. The local user is no admin: it writes what it owns (the indices of
``INDICES``), never what an account owns.

The cookie is ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's page
sends it) and ``Secure`` when the request came over TLS; together with the API taking
only JSON bodies (which a form on another site cannot send) that keeps other sites from
acting for a logged-in user.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Request, Response

from ragloom_app.accounts import User
from ragloom_app.accounts.keys import API_KEY_PREFIX
from ragloom_app.accounts.store import SESSION_HOURS
from ragloom_app.api.errors import ApiError
from ragloom_app.app import BaseApp
from ragloom_app.db.models import LOCAL_USER

__all__ = [
    "LOCAL",
    "SESSION_COOKIE",
    "authenticator",
    "by_api_key",
    "cookie_is_secure",
    "end_session_cookie",
    "set_session_cookie",
]

SESSION_COOKIE = "ragloom_session"
LOCAL = User(id=LOCAL_USER, name=LOCAL_USER, is_admin=False)
"""The user of a server without login: the laptop's owner."""


def _bearer(request: Request) -> str | None:
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" and credentials.strip() else None


def by_api_key(request: Request) -> bool:
    """Whether ``request`` names its user by an API key (``Authorization: Bearer rlk_...``)."""
    key = _bearer(request)
    return key is not None and key.startswith(API_KEY_PREFIX)


def authenticator(app: BaseApp) -> Callable[[Request], User]:
    """The dependency that gives each route its user (see the module docstring)."""

    def current_user(request: Request) -> User:
        required = app.settings.require_login
        key = _bearer(request)
        if key is not None and (key.startswith(API_KEY_PREFIX) or required):
            user = app.accounts.key_user(key)
            if user is None:
                raise ApiError(401, "unauthorized", "the API key is not valid")
            return user
        # Without login an OpenAI client must still send some key ("sk-local"): one that
        # is no key of Ragloom's names nobody, and the request is the local user's.
        token = request.cookies.get(SESSION_COOKIE)
        if token:
            user = app.accounts.session_user(token)
            if user is None:
                raise ApiError(401, "unauthorized", "the session has ended: log in again")
            return user
        if not required:
            return LOCAL
        raise ApiError(
            401, "unauthorized", "log in first, or send an API key (Authorization: Bearer rlk_...)"
        )

    return current_user


def cookie_is_secure(request: Request, always: bool) -> bool:
    """Whether a cookie set in answer to ``request`` is ``Secure``: over TLS, or ``always``
    (``SECURE_COOKIES``, behind a TLS-terminating proxy)."""
    return always or request.url.scheme == "https"


def set_session_cookie(
    response: Response, request: Request, token: str, *, always_secure: bool = False
) -> None:
    """Give the browser its session cookie (``Secure`` as :func:`cookie_is_secure` says)."""
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=SESSION_HOURS * 3600,
        httponly=True,
        samesite="strict",
        secure=cookie_is_secure(request, always_secure),
        path="/",
    )


def end_session_cookie(response: Response) -> None:
    """Make the browser forget its session cookie."""
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
