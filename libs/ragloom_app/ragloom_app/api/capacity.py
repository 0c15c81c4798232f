"""How many answers the API makes at once: a request past that is refused (429), never
queued on a server thread.

Answers hold a server thread from start to end (the model itself answers one at a time),
so without a bound enough slow questions would take every thread, and the health check,
logins and the UI's own requests with them.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask

from ragloom_app.api.errors import ApiError
from ragloom_app.api.stream import SSE_MEDIA_TYPE

__all__ = ["MAX_ANSWERS_AT_ONCE", "AnswerSlots", "Slot", "answer_response"]

T = TypeVar("T")
R = TypeVar("R")

MAX_ANSWERS_AT_ONCE = 16
"""Answers the HTTP API and the OpenAI endpoint make at once, together, by default
(``API_MAX_ANSWERS``): well under the 40 threads of the server's pool, so the health check,
logins and the UI's own requests always find one."""


class AnswerSlots:
    """A bounded count of answers in progress."""

    def __init__(self, slots: int = MAX_ANSWERS_AT_ONCE) -> None:
        self._free = threading.BoundedSemaphore(slots)
        self.slots = slots

    def take(self) -> None:
        """Take a slot, or refuse the request (429) when every one is taken."""
        if not self._free.acquire(blocking=False):
            raise ApiError(
                429, "busy", f"{self.slots} answers are being made: ask again in a moment"
            )

    def give_back(self) -> None:
        """Free a slot taken with :meth:`take`."""
        self._free.release()

    def slot(self) -> Slot:
        """A slot taken now, to give back once (:meth:`Slot.give_back` is idempotent):
        for a stream, whose end may come from its generator or its response's cleanup."""
        self.take()
        return Slot(self)

    @contextmanager
    def held(self) -> Iterator[None]:
        """A slot for the block's duration."""
        self.take()
        try:
            yield
        finally:
            self.give_back()


class Slot:
    """One taken slot of :class:`AnswerSlots`."""

    def __init__(self, slots: AnswerSlots) -> None:
        self._slots = slots
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
        self._slots.give_back()

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


def answer_response(
    slots: AnswerSlots,
    start: Callable[[], Iterator[T]],
    *,
    stream: Callable[[Iterator[T], Slot], AsyncIterator[str]] | None,
    collect: Callable[[Iterator[T]], R],
) -> StreamingResponse | R:
    """An answer within a slot of ``slots``: ``start()`` begins it (what it refuses raises
    here, the slot given back); then ``stream`` makes it server-sent events, the slot given
    back when the stream ends (by the stream, or by the response's cleanup if it never
    began), or, without ``stream``, ``collect`` makes the one response, the slot given back
    after."""
    slot = slots.slot()
    try:
        items = start()
    except BaseException:
        slot.give_back()
        raise
    if stream is not None:
        return StreamingResponse(
            stream(items, slot),
            media_type=SSE_MEDIA_TYPE,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
            background=BackgroundTask(slot.give_back),
        )
    try:
        return collect(items)
    finally:
        slot.give_back()
