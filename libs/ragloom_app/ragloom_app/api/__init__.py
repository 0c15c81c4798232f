"""Ragloom's HTTP API (``/api/v1``) and its OpenAI-compatible endpoint (``/v1``), served by
the same process as the UI (see docs/api.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter, Depends

from ragloom_app.api.errors import ApiError
from ragloom_app.api.text_guard import refuse_nul_text

if TYPE_CHECKING:
    from ragloom_app.pages.chat import ChatPage

__all__ = ["API_PATH_PREFIXES", "api_routers"]

API_PATH_PREFIXES = ("/api/v1", "/v1")
"""The paths the API answers under; anything else is the UI's."""


def _unknown_paths() -> APIRouter:
    """404 as JSON for any other path under the API's prefixes (not the UI's page)."""
    router = APIRouter(include_in_schema=False)

    for prefix in API_PATH_PREFIXES:

        @router.api_route(
            prefix + "/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"]
        )
        def unknown(path: str) -> None:
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
        _unknown_paths(),
    ]
    # Every route refuses text no database can keep, before it reads the request.
    guarded = APIRouter(dependencies=[Depends(refuse_nul_text)])
    for router in routers:
        guarded.include_router(router)
    return [guarded]
