"""The OpenAI-compatible endpoint, ``/v1``: any OpenAI client can use a reasoning mode as
a model.

``GET /v1/models`` lists one model per mode (``ragloom-fullqa``, ``ragloom-rewoo``, plugin
modes too), and ``GET /v1/models/{model}`` gives one. ``POST /v1/chat/completions``
answers the last user message over the indices with that mode; the user and assistant
messages before it are the request's history (``ReasoningState.history``: FullQA, and auto
when it picks FullQA, search with the previous user message and show the last two
exchanges in their prompt; the other built-in modes answer the question alone, and a
plugin mode may use them). Streaming sends the answer as it is written. When Ragloom
revises an answer after it was written, a revision that only adds citation marks changes
nothing a client shows; one that changes its words (the grounding check declined it, or
removed a sentence) is sent as one more piece, after a blank line, saying so: a client
never keeps an answer Ragloom withdrew without being told. Citations travel in the extra
field ``ragloom`` (:class:`RagloomExtra`), in the response and in the stream's last chunk.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from fastapi import APIRouter, Depends, Request

from ragloom.events import AnswerDelta, AnswerRecord, AnswerRevised
from ragloom.llms.base import ChatMessage
from ragloom.qa.citations import strip_citations
from ragloom_app.accounts import User
from ragloom_app.api.bridge import close_items, iterate_in_thread, started
from ragloom_app.api.capacity import AnswerSlots, Slot, answer_response
from ragloom_app.api.errors import ApiError, api_error
from ragloom_app.api.models import ERROR_RESPONSES
from ragloom_app.api.openai_models import (
    MODEL_PREFIX,
    ChatCompletion,
    ChatCompletionRequest,
    ModelList,
    ModelOut,
    RagloomExtra,
)
from ragloom_app.api.stream import SSE_MEDIA_TYPE
from ragloom_app.errors import UserFacingError, scrub
from ragloom_app.pages.chat import AnswerFinished, ChatPage

__all__ = ["REVISED_NOTICE", "openai_router"]

REVISED_NOTICE = "(Revised by Ragloom's check of the answer against its sources:)"
"""What precedes, in a stream, an answer whose words were revised after it was written."""


def _extra(record: AnswerRecord) -> RagloomExtra:
    return RagloomExtra(
        mode=record.mode,
        citations=[c.to_dict() for c in record.citations],
        grounding=None if record.grounding is None else record.grounding.to_dict(),
    )


def _usage(record: AnswerRecord) -> dict[str, int]:
    usage = record.usage
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    }


def _split(request: ChatCompletionRequest) -> tuple[str, list[ChatMessage]]:
    """The question (the last message, a user's) and the turns before it."""
    last = request.messages[-1]
    if last.role != "user" or not last.text().strip():
        raise ApiError(
            422, "invalid_request", "the last message must be the user's question", "messages"
        )
    history = [
        ChatMessage("user" if m.role == "user" else "assistant", m.text())
        for m in request.messages[:-1]
        if m.role in ("user", "assistant") and m.text().strip()
    ]
    return last.text(), history


def openai_router(
    page: ChatPage, current_user: Callable[[Request], User], slots: AnswerSlots
) -> APIRouter:
    """The ``/v1`` routes over ``page``'s app (see the module docstring)."""
    app = page.app
    router = APIRouter(
        prefix="/v1",
        tags=["openai"],
        responses=ERROR_RESPONSES,
        dependencies=[Depends(current_user)],
    )

    def mode_of(model: str) -> str:
        mode = model.removeprefix(MODEL_PREFIX)
        if not model.startswith(MODEL_PREFIX) or mode not in app.reasonings:
            known = ", ".join(MODEL_PREFIX + m for m in app.reasonings)
            message = f"no model {model!r} (models: {known})"
            raise ApiError(404, "model_not_found", message, param="model")
        return mode

    @router.get("/models")
    def models(user: User = Depends(current_user)) -> ModelList:
        """One model per reasoning mode."""
        return ModelList(data=[ModelOut(id=MODEL_PREFIX + mode) for mode in app.reasonings])

    @router.get("/models/{model:path}")
    def model(model: str, user: User = Depends(current_user)) -> ModelOut:
        """One model (``model_not_found``, 404, for a name that is none of them)."""
        return ModelOut(id=MODEL_PREFIX + mode_of(model))

    @router.post(
        "/chat/completions",
        response_model=ChatCompletion,
        responses={200: {"content": {SSE_MEDIA_TYPE: {}}, "description": "The answer."}},
    )
    async def chat_completions(
        request: ChatCompletionRequest, http_request: Request, user: User = Depends(current_user)
    ) -> Any:
        """Answer the last user message with the model's mode (see the module docstring)."""
        # Async, so that the answer stops when its client leaves (answer_response): what
        # blocks runs on threads of its own.
        mode = mode_of(request.model)
        question, history = _split(request)
        try:
            page.check_question(question)
        except UserFacingError as exc:
            field = f"messages[{len(request.messages) - 1}].content"
            raise ApiError(422, "invalid_request", scrub(str(exc)), param=field) from None
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        include_usage = bool(request.stream_options and request.stream_options.include_usage)

        def stream(events: Iterator[Any], slot: Slot) -> AsyncIterator[str]:
            chunks = _chunks(events, completion_id, created, request.model)
            return _sse(chunks, include_usage, slot)

        def collect(events: Iterator[Any]) -> ChatCompletion:
            record = next(item.record for item in events if isinstance(item, AnswerFinished))
            return ChatCompletion(
                id=completion_id,
                created=created,
                model=request.model,
                choices=[
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": record.answer},
                        "finish_reason": "stop",
                    }
                ],
                usage=_usage(record),
                ragloom=_extra(record),
            )

        return await answer_response(
            http_request,
            slots,
            user.id,
            # The mode refuses what it cannot take before its first event.
            lambda: started(page.ask(question, mode=mode, history=history, user_id=user.id)),
            stream=stream if request.stream else None,
            collect=collect,
        )

    return router


def _chunk(completion_id: str, created: int, model: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        **fields,
    }


def _chunks(
    items: Iterator[Any], completion_id: str, created: int, model: str
) -> Iterator[dict[str, Any]]:
    """The stream's chunks (JSON objects); a ``usage`` key on the last one's side.
    Closing them closes ``items``: the answer stops with its stream."""

    def delta(content: str) -> dict[str, Any]:
        choice = {"index": 0, "delta": {"content": content}, "finish_reason": None}
        return _chunk(completion_id, created, model, choices=[choice])

    opening = {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
    shown = ""
    revised: str | None = None
    try:
        yield _chunk(completion_id, created, model, choices=[opening])
        for item in items:
            if isinstance(item, AnswerDelta) and item.text:
                shown += item.text
                yield delta(item.text)
            elif isinstance(item, AnswerRevised):
                revised = item.text
            elif isinstance(item, AnswerFinished):
                record = item.record
                if revised is not None and _words(revised) != _words(shown):
                    yield delta(f"\n\n{REVISED_NOTICE}\n{record.answer}")
                last = {"index": 0, "delta": {}, "finish_reason": "stop"}
                yield _chunk(
                    completion_id,
                    created,
                    model,
                    choices=[last],
                    ragloom=_extra(record).model_dump(),
                    usage=_usage(record),
                )
    finally:  # a generator closed mid-loop leaves what it loops over open
        close_items(items)


def _words(text: str) -> str:
    return " ".join(strip_citations(text).split())


async def _sse(
    chunks: Iterator[dict[str, Any]], include_usage: bool, slot: Slot
) -> AsyncIterator[str]:
    try:
        async for chunk in iterate_in_thread(chunks, on_end=slot.held_by_work()):
            usage = chunk.pop("usage", None)
            yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"
            if usage is not None and include_usage:
                tail = {**chunk, "choices": [], "usage": usage}
                tail.pop("ragloom", None)
                yield f"data: {json.dumps(tail, ensure_ascii=False)}\n\n"
    except Exception as exc:  # the status line is sent: the failure is a chunk, as coded
        yield f"data: {json.dumps(api_error(exc, 'Answering').body())}\n\n"
    finally:
        slot.give_back()
    yield "data: [DONE]\n\n"
