"""The HTTP API, ``/api/v1``: modes, indices and their files, conversations, asking.

Every route acts for the user the request authenticates (:mod:`.auth`): a conversation
is its owner's alone, and an index is seen only by the users who may read it; another
user's object answers 404, as one that does not exist.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from fastapi import APIRouter, Depends, Query, Request, Response
from starlette.concurrency import run_in_threadpool

import ragloom_app
from ragloom.events import Event
from ragloom_app.accounts import User
from ragloom_app.api.bridge import iterate_in_thread, started
from ragloom_app.api.capacity import AnswerSlots, Slot, answer_response
from ragloom_app.api.errors import ApiError, api_error, not_found
from ragloom_app.api.models import (
    ERROR_RESPONSES,
    AnswerOut,
    AskRequest,
    ConversationCreate,
    ConversationDetail,
    ConversationOut,
    ConversationRename,
    ErrorOut,
    FileOut,
    HealthOut,
    IndexOut,
    IndexSettingsOut,
    MessageOut,
    ModeOut,
    VersionOut,
    file_out,
)
from ragloom_app.api.settings_schema import settings_json_schema
from ragloom_app.api.stream import SSE_MEDIA_TYPE, event_payload, sse_message
from ragloom_app.index.base import BaseIndex
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.reasoning.settings import typed_mode_settings

__all__ = ["API_PREFIX", "MAX_CONVERSATIONS_PAGE", "api_router", "index_out", "public_router"]

MAX_CONVERSATIONS_PAGE = 500
"""The most conversations ``GET /conversations`` gives at once (``limit``; 100 unless asked)."""

API_PREFIX = "/api/v1"


def _conversation(summary: dict[str, Any]) -> ConversationOut:
    return ConversationOut(
        id=summary["id"], title=summary["title"], updated_at=summary["updated_at"].isoformat()
    )


def index_out(app: Any, index: BaseIndex) -> IndexOut:
    """An index as the API shows it: with its owner's name and whether it is shared."""
    access = app.indices.access(index)
    return IndexOut(
        name=index.name,
        type=type(index).__name__,
        files=len(index.list_sources()),
        owner=app.accounts.display_name(access.owner),
        shared=access.shared,
    )


def api_router(
    page: ChatPage, current_user: Callable[[Request], User], slots: AnswerSlots
) -> APIRouter:
    """The ``/api/v1`` routes over ``page``'s app (see the module docstring)."""
    app = page.app
    # Every route acts for an authenticated user, even one that reads nothing of its own.
    router = APIRouter(
        prefix=API_PREFIX, responses=ERROR_RESPONSES, dependencies=[Depends(current_user)]
    )

    def index_named(name: str, user: User) -> BaseIndex:
        for index in app.indices.readable_by(user.id):
            if index.name == name:
                return index
        raise not_found("index", name)

    def conversation(conversation_id: str, user: User) -> dict[str, Any]:
        found = page.conversations.get(conversation_id, user.id)
        if found is None:
            raise not_found("conversation", conversation_id)
        return found

    @router.get("/modes", tags=["modes"])
    def modes() -> list[ModeOut]:
        """The reasoning modes, each with its settings as a JSON Schema."""
        llms = app.selectable_llm_names()
        return [
            ModeOut(
                id=mode_id,
                name=cls.get_info().name,
                description=cls.get_info().description,
                settings_schema=settings_json_schema(cls.get_user_settings(), llms),
            )
            for mode_id, cls in app.reasonings.items()
        ]

    @router.get("/indices", tags=["indices"])
    def indices(user: User = Depends(current_user)) -> list[IndexOut]:
        """The indices the user may read (its own, and the shared ones)."""
        return [index_out(app, index) for index in app.indices.readable_by(user.id)]

    @router.get("/indices/{name}", tags=["indices"])
    def index(name: str, user: User = Depends(current_user)) -> IndexOut:
        """One index."""
        return index_out(app, index_named(name, user))

    @router.get("/indices/{name}/files", tags=["indices"])
    def files(name: str, user: User = Depends(current_user)) -> list[FileOut]:
        """The files of an index, with their state and chunk count."""
        return [file_out(s) for s in index_named(name, user).list_sources()]

    @router.get("/indices/{name}/files/{file_id}", tags=["indices"])
    def file(name: str, file_id: str, user: User = Depends(current_user)) -> FileOut:
        """One file of an index, with its state and chunk count."""
        for entry in index_named(name, user).list_sources():
            if str(entry["id"]) == file_id:
                return file_out(entry)
        raise not_found("file", file_id)

    @router.get("/indices/{name}/settings", tags=["indices"])
    def index_settings(name: str, user: User = Depends(current_user)) -> IndexSettingsOut:
        """How an index was made, and the search settings an ask may give for it."""
        index = index_named(name, user)
        specs = type(index).admin_settings_for(app.indices.readers)
        return IndexSettingsOut(
            name=index.name,
            config={**{k: s.get("value") for k, s in specs.items()}, **index.config},
            search_settings_schema=settings_json_schema(
                type(index).get_user_settings(), app.selectable_llm_names()
            ),
        )

    @router.get("/conversations", tags=["conversations"])
    def conversations(
        user: User = Depends(current_user),
        limit: int = Query(100, ge=1, le=MAX_CONVERSATIONS_PAGE, description="At most this many."),
        offset: int = Query(0, ge=0, le=2**31 - 1, description="After the first this many."),
    ) -> list[ConversationOut]:
        """The user's conversations, the last changed first, a page at a time."""
        listed = page.conversations.list(user.id, limit=limit, offset=offset)
        return [_conversation(c) for c in listed]

    @router.post("/conversations", status_code=201, tags=["conversations"])
    def create_conversation(
        body: ConversationCreate | None = None, user: User = Depends(current_user)
    ) -> ConversationOut:
        """A new, empty conversation."""
        title = body.title if body else "New conversation"
        created = page.conversations.create(title, owner=user.id)
        return _conversation(conversation(created, user))

    @router.get("/conversations/{conversation_id}", tags=["conversations"])
    def get_conversation(
        conversation_id: str, user: User = Depends(current_user)
    ) -> ConversationDetail:
        """A conversation with its messages, oldest first."""
        summary = _conversation(conversation(conversation_id, user))
        messages = [
            MessageOut(
                role="user" if m.role == "user" else "assistant",
                content=m.content,
                mode=m.mode,
                citations=[c.to_dict() for c in m.citations],  # type: ignore[misc]
                grounding=None if m.grounding is None else m.grounding.to_dict(),
            )
            for m in page.conversations.messages(conversation_id)
        ]
        return ConversationDetail(**summary.model_dump(), messages=messages)

    @router.patch("/conversations/{conversation_id}", tags=["conversations"])
    def rename_conversation(
        conversation_id: str, body: ConversationRename, user: User = Depends(current_user)
    ) -> ConversationOut:
        """Give a conversation a new title."""
        if not page.conversations.rename(conversation_id, body.title, user.id):
            raise not_found("conversation", conversation_id)
        return _conversation(conversation(conversation_id, user))

    @router.delete("/conversations/{conversation_id}", status_code=204, tags=["conversations"])
    def delete_conversation(conversation_id: str, user: User = Depends(current_user)) -> Response:
        """Delete a conversation and its messages."""
        if not page.conversations.delete(conversation_id, user.id):
            raise not_found("conversation", conversation_id)
        return Response(status_code=204)

    @router.post(
        "/conversations/{conversation_id}/ask",
        tags=["conversations"],
        response_model=AnswerOut,
        responses={
            200: {"content": {SSE_MEDIA_TYPE: {}}, "description": "The answer."},
            409: {
                "description": "An answer is being written in this conversation: ask again "
                "once it ends (Retry-After).",
                "model": ErrorOut,
            },
        },
    )
    async def ask(
        conversation_id: str,
        body: AskRequest,
        request: Request,
        user: User = Depends(current_user),
    ) -> Any:
        """Answer a question in a conversation: one JSON object (the shape ``ragloom ask
        --json`` prints), or with ``stream`` server-sent events of the typed events the UI
        renders, the whole answer last (``done``). Both turns are saved."""
        # Async, so that the answer stops when its client leaves (answer_response): what
        # blocks (the database, the answer) runs on threads.
        await run_in_threadpool(conversation, conversation_id, user)

        def collect(events: Iterator[Any]) -> dict[str, Any]:
            for item in events:
                if isinstance(item, AnswerFinished):
                    return _answer(item, conversation_id)
            raise ApiError(500, "internal_error", "the answer ended without a record")

        return await answer_response(
            request,
            slots,
            user.id,
            lambda: _checked_ask(page, conversation_id, body, user),
            stream=(lambda events, slot: _sse(events, conversation_id, slot))
            if body.stream
            else None,
            collect=collect,
        )

    return router


def public_router() -> APIRouter:
    """The routes that need no login: whether the server answers, and its version."""
    public = APIRouter(prefix=API_PREFIX)

    # Async: answered on the event loop, never waiting for a thread of the pool, which
    # requests waiting on the database may all hold.
    @public.get("/health", tags=["server"])
    async def health() -> HealthOut:
        """Whether the server answers."""
        return HealthOut()

    @public.get("/version", tags=["server"])
    async def version() -> VersionOut:
        """The version serving."""
        return VersionOut(version=ragloom_app.__version__)

    return public


def _checked_ask(page: ChatPage, conversation_id: str, body: AskRequest, user: User) -> Any:
    """The answer's events, with everything the request could get wrong refused first
    (before anything is saved): an unknown mode or index, a setting the mode refuses, a
    question past the app's limit."""
    cls = page.reasoning_class(body.mode)
    settings = typed_mode_settings(cls.get_user_settings(), body.settings)
    named = [*(body.indices or []), *body.index_settings]
    if named:
        readable = {index.name for index in page.app.indices.readable_by(user.id)}
        unknown = [name for name in named if name not in readable]
        if unknown:
            raise not_found("index", unknown[0])
    page.check_question(body.question)
    events = page.ask(
        body.question,
        mode=body.mode,
        settings=settings,
        conversation_id=conversation_id,
        indices=body.indices,
        index_settings=body.index_settings,
        user_id=user.id,
    )
    # ask() checks the rest (an index setting, an LLM not offered) before its first event.
    return started(events)


def _answer(finished: AnswerFinished, conversation_id: str) -> dict[str, Any]:
    return {"conversation_id": conversation_id, **finished.record.to_dict()}


async def _sse(events: Any, conversation_id: str, slot: Slot) -> AsyncIterator[str]:
    try:
        async for item in iterate_in_thread(events, on_end=slot.held_by_work()):
            if isinstance(item, AnswerFinished):
                yield sse_message("done", _answer(item, conversation_id))
            else:
                event: Event = item
                name, data = event_payload(event)
                yield sse_message(name, data)
    except Exception as exc:  # the status line is sent: the failure is an event, as coded
        yield sse_message("error", api_error(exc, "Answering").body())
    finally:
        slot.give_back()
