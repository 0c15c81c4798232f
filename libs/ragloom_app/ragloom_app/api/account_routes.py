"""``/api/v1`` routes of the account itself: log in and out, who am I, API keys."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from ragloom_app.accounts import LoginRefused, User
from ragloom_app.accounts.passwords import MAX_PASSWORD_CHARS
from ragloom_app.api.auth import (
    SESSION_COOKIE,
    by_api_key,
    end_session_cookie,
    set_session_cookie,
)
from ragloom_app.api.client_address import proxy_networks, request_address
from ragloom_app.api.errors import ApiError, error_body, not_found
from ragloom_app.api.models import ERROR_RESPONSES
from ragloom_app.app import BaseApp
from ragloom_app.db.models import LOCAL_USER

__all__ = ["account_router"]


class LoginRequest(BaseModel):
    """A name and its password."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64)
    password: str = Field(min_length=1, max_length=MAX_PASSWORD_CHARS)


class UserOut(BaseModel):
    """Who the request acts for."""

    name: str
    is_admin: bool


class KeyCreate(BaseModel):
    """A new API key's name (to tell keys apart)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("key", min_length=1, max_length=80)


class KeyOut(BaseModel):
    """An API key as listed: never the key itself."""

    id: str
    name: str
    prefix: str = Field(description="The key's first characters.")
    created_at: datetime
    last_used_at: datetime | None


class KeyCreated(KeyOut):
    """A new API key: ``key`` is shown this once and cannot be read back."""

    key: str


def account_router(app: BaseApp, current_user: Callable[[Request], User]) -> APIRouter:
    """Log in and out, ``/me``, and the user's API keys."""
    router = APIRouter(prefix="/api/v1", tags=["account"], responses=ERROR_RESPONSES)
    proxies = proxy_networks(app.settings.trusted_proxies)

    @router.post("/login", responses={429: {"description": "Too many failed logins."}})
    def login(body: LoginRequest, request: Request) -> UserOut:
        """Log in: the response sets the session cookie."""
        address = request_address(request, proxies)
        try:
            user, token = app.accounts.login(body.name, body.password, address)
        except LoginRefused as exc:
            status = 429 if exc.retry_after > 0 else 401
            headers = {"Retry-After": str(int(exc.retry_after) + 1)} if status == 429 else None
            code = "too_many_attempts" if status == 429 else "unauthorized"
            refused = error_body(status, code, str(exc))
            return JSONResponse(refused, status_code=status, headers=headers)  # type: ignore[return-value]
        response = JSONResponse(UserOut(name=user.name, is_admin=user.is_admin).model_dump())
        set_session_cookie(response, request, token, always_secure=app.settings.secure_cookies)
        return response  # type: ignore[return-value]

    @router.post("/logout", status_code=204)
    def logout(request: Request) -> Response:
        """End this browser's session."""
        token = request.cookies.get(SESSION_COOKIE)
        if token:
            app.accounts.logout(token)
        response = Response(status_code=204)
        end_session_cookie(response)
        return response

    @router.get("/me")
    def me(user: User = Depends(current_user)) -> UserOut:
        """Who the request acts for."""
        return UserOut(name=user.name, is_admin=user.is_admin)

    @router.get("/keys")
    def keys(user: User = Depends(current_user)) -> list[KeyOut]:
        """The user's API keys."""
        if user.id == LOCAL_USER:
            return []
        return [KeyOut(**vars(k)) for k in app.accounts.keys(user)]

    @router.post(
        "/keys",
        status_code=201,
        responses={
            403: {"description": "Without accounts there is no key to make, nor with a key."}
        },
    )
    def create_key(
        request: Request, body: KeyCreate | None = None, user: User = Depends(current_user)
    ) -> KeyCreated:
        """A new API key, shown this once. Made in a login session only: a key that could
        make keys would leave one behind each time it leaked and was revoked."""
        if user.id == LOCAL_USER:
            raise ApiError(
                403,
                "forbidden",
                "API keys belong to accounts: add one with `ragloom users add NAME`",
            )
        if by_api_key(request):
            raise ApiError(
                403,
                "forbidden",
                "an API key cannot make API keys: log in (POST /api/v1/login) to make one",
            )
        info, key = app.accounts.create_key(user, body.name if body else "key")
        return KeyCreated(**vars(info), key=key)

    @router.delete("/keys/{key_id}", status_code=204)
    def revoke_key(key_id: str, user: User = Depends(current_user)) -> Response:
        """Revoke one of the user's API keys."""
        if not app.accounts.revoke_key(user, key_id):
            raise not_found("API key", key_id)
        return Response(status_code=204)

    return router
