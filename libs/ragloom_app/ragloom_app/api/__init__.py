"""Ragloom's HTTP API (``/api/v1``) and its OpenAI-compatible endpoint (``/v1``), served by
the same process as the UI (see docs/api.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fastapi import APIRouter, Depends, Request
from fastapi.routing import APIRoute

from ragloom_app.api.errors import ApiError
from ragloom_app.api.text_guard import refuse_nul_text

if TYPE_CHECKING:
    from ragloom_app.pages.chat import ChatPage

__all__ = ["API_PATH_PREFIXES", "api_routers"]

API_PATH_PREFIXES = ("/api/v1", "/v1")
"""The paths the API answers under; anything else is the UI's."""


def _unknown_paths(known: Sequence[APIRouter]) -> APIRouter:
    """404 as JSON for any other path under the API's prefixes (not the UI's page); 405
    for a path of a route of ``known`` asked with a method it does not take (Starlette
    would say so itself, but these catch-all routes match every path first)."""
    router = APIRouter(include_in_schema=False)

    def taken(path: str) -> list[str]:
        methods: set[str] = set()
        for route in (r for routes in known for r in routes.routes):
            if isinstance(route, APIRoute) and route.path_regex.match(path):
                methods |= route.methods or set()
        return sorted(methods)

    for prefix in API_PATH_PREFIXES:

        @router.api_route(
            prefix + "/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"]
        )
        def unknown(request: Request, path: str) -> None:
            methods = taken(request.scope["path"])
            if methods:
                message = f"{request.method} is not taken here; {', '.join(methods)} is"
                allow = {"Allow": ", ".join(methods)}
                raise ApiError(405, "method_not_allowed", message, headers=allow)
            raise ApiError(404, "not_found", "no such API path")

    return router


def api_routers(page: ChatPage) -> list[APIRouter]:
    """Every API route over ``page``'s app, the unknown paths last."""
    from ragloom_app.api.account_routes import account_router
    from ragloom_app.api.auth import authenticator
    from ragloom_app.api.capacity import AnswerSlots
    from ragloom_app.api.docs_page import docs_router
    from ragloom_app.api.index_routes import index_router
    from ragloom_app.api.job_routes import job_router
    from ragloom_app.api.openai_routes import openai_router
    from ragloom_app.api.routes import api_router, index_out, public_router

    current_user = authenticator(page.app)
    # The API's and the OpenAI endpoint's answers, together.
    settings = page.app.settings
    slots = AnswerSlots(settings.api_max_answers, settings.api_max_answers_per_user)
    routers = [
        public_router(),
        account_router(page.app, current_user),
        api_router(page, current_user, slots),
        index_router(page.app, current_user, index_out),
        job_router(page.app, current_user),
        openai_router(page, current_user, slots),
        docs_router(),
    ]
    routers.append(_unknown_paths(tuple(routers)))  # the routes before it
    # Every route refuses text no database can keep, before it reads the request.
    guarded = APIRouter(dependencies=[Depends(refuse_nul_text)])
    for router in routers:
        guarded.include_router(router)
    return [guarded]
