"""How many answers the API makes at once: a request past that is refused (429), never
queued on a server thread.

Answers hold a server thread from start to end (the model itself answers one at a time),
so without a bound enough slow questions would take every thread, and the health check,
logins and the UI's own requests with them.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import anyio
from fastapi import Request, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from ragloom_app.api.bridge import close_items, collect_in_thread
from ragloom_app.api.errors import ApiError
from ragloom_app.api.stream import SSE_MEDIA_TYPE
from ragloom_app.db.models import LOCAL_USER

__all__ = ["MAX_ANSWERS_AT_ONCE", "MAX_ANSWERS_PER_USER", "AnswerSlots", "Slot", "answer_response"]

CLIENT_LEFT = 499
"""The status of the answer to a client that left before it was made (nginx's "client
closed request"): nobody reads it, the server does not even send it."""

T = TypeVar("T")
R = TypeVar("R")

MAX_ANSWERS_AT_ONCE = 16
"""Answers the HTTP API and the OpenAI endpoint make at once, together, by default
(``API_MAX_ANSWERS``): well under the 40 threads of the server's pool, so the health check,
logins and the UI's own requests always find one."""


MAX_ANSWERS_PER_USER = 4
"""Of those, the most one user's requests hold at once, by default
(``API_MAX_ANSWERS_PER_USER``): one client opening streams cannot take every slot. The
local user (every request, when login is off) is held to the whole bound only."""


BUSY_RETRY_AFTER = {"Retry-After": "1"}
"""When a request refused for want of a slot may try again: answers end all the time, and
a refusal costs the server nothing."""


class AnswerSlots:
    """A bounded count of answers in progress, and of each user's."""

    def __init__(
        self, slots: int = MAX_ANSWERS_AT_ONCE, per_user: int = MAX_ANSWERS_PER_USER
    ) -> None:
        self.slots = slots
        self.per_user = min(per_user, slots)
        self._lock = threading.Lock()
        self._taken: dict[str, int] = {}  # by user; the sum is what is taken

    def take(self, owner: str) -> None:
        """Take a slot for ``owner``, or refuse the request (429) when every one is
        taken, or ``owner`` holds its share."""
        with self._lock:
            mine = self._taken.get(owner, 0)
            if sum(self._taken.values()) >= self.slots:
                raise ApiError(
                    429,
                    "busy",
                    f"{self.slots} answers are being made: ask again in a moment",
                    headers=BUSY_RETRY_AFTER,
                )
            # The local user is everyone when login is off (REQUIRE_LOGIN): the whole
            # bound is theirs.
            if mine >= self.per_user and owner != LOCAL_USER:
                raise ApiError(
                    429,
                    "busy",
                    f"{self.per_user} of your answers are being made (API_MAX_ANSWERS_PER_USER):"
                    " ask again when one has ended",
                    headers=BUSY_RETRY_AFTER,
                )
            self._taken[owner] = mine + 1

    def give_back(self, owner: str) -> None:
        """Free a slot taken with :meth:`take` for ``owner``."""
        with self._lock:
            left = self._taken.get(owner, 0) - 1
            if left > 0:
                self._taken[owner] = left
            else:
                self._taken.pop(owner, None)

    def slot(self, owner: str) -> Slot:
        """A slot taken now for ``owner``, to give back once (:meth:`Slot.give_back` is
        idempotent): for a stream, whose end may come from its generator or its
        response's cleanup."""
        self.take(owner)
        return Slot(self, owner)


class Slot:
    """One taken slot of :class:`AnswerSlots`."""

    def __init__(self, slots: AnswerSlots, owner: str) -> None:
        self._slots = slots
        self._owner = owner
        self._lock = threading.Lock()
        self._held = True
        self._by_work = False

    def give_back(self) -> None:
        """Free the slot; a second call does nothing, nor does any call once the work
        holds it (:meth:`held_by_work`)."""
        with self._lock:
            if not self._held or self._by_work:
                return
            self._held = False
        self._slots.give_back(self._owner)

    def held_by_work(self) -> Callable[[], None]:
        """From now on the slot is freed only by the function returned, which the work
        calls when it has ended: a client that leaves stops a stream at once, while its
        answer's thread goes on to its next event; the slot bounds the work, not the
        streams."""
        with self._lock:
            self._by_work = True

        def ended() -> None:
            with self._lock:
                self._by_work = False
            self.give_back()

        return ended


class _AnswerStream(StreamingResponse):
    """An answer's server-sent events (``body``). Once ``body`` began, its thread owns the
    answer (``items``) and closes it; if it never began (the client left before the
    headers were sent), nothing else would: the response closes it then."""

    def __init__(self, items: Iterator[Any], slot: Slot, body: AsyncIterator[str]) -> None:
        self._items: Iterator[Any] | None = items
        self._slot = slot

        async def begun() -> AsyncIterator[str]:
            # No await until body's thread has started: from here it closes the answer.
            self._items = None
            async for part in body:
                yield part

        super().__init__(
            begun(),
            media_type=SSE_MEDIA_TYPE,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            items, self._items = self._items, None
            if items is not None:
                # Closing an answer stores it as far as it went: on a thread, not the loop;
                # shielded, since a cancelled request (the server stopping) must still.
                with anyio.CancelScope(shield=True):
                    await run_in_threadpool(close_items, items)
            self._slot.give_back()  # nothing once its work holds it (held_by_work)


async def answer_response(
    request: Request,
    slots: AnswerSlots,
    owner: str,
    start: Callable[[], Iterator[T]],
    *,
    stream: Callable[[Iterator[T], Slot], AsyncIterator[str]] | None,
    collect: Callable[[Iterator[T]], R],
) -> Response | R:
    """An answer of ``owner``'s within a slot of ``slots``, for ``request``: ``start()``
    begins it on a server thread (what it refuses raises here, the slot given back); then
    ``stream`` makes it server-sent events, the slot given back when its work ends
    (:meth:`Slot.held_by_work`), or, the answer closed, by the response's cleanup if the
    stream never began (its client left first); or, without ``stream``, ``collect`` makes
    the one response of its items once all are made. Either way a client that leaves
    stops the answer at its next item, which frees the slot, the model and the
    conversation; a client waiting for a whole answer is not answered then."""
    slot = slots.slot(owner)
    try:
        items = await run_in_threadpool(start)
    except BaseException:
        slot.give_back()
        raise
    if stream is not None:
        return _AnswerStream(items, slot, stream(items, slot))
    made = await collect_in_thread(items, request.receive, on_end=slot.held_by_work())
    if made is None:
        return Response(status_code=CLIENT_LEFT)
    return collect(iter(made))
