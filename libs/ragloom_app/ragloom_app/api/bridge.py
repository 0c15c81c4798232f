"""A blocking iterator (an answer's events) consumed by async code, on one thread.

An answer is made by blocking code (the LLM, the stores), and some of it must stay on one
thread from start to end (a model is locked for a whole generation). :func:`iterate_in_thread`
runs the iterator on a thread of its own and hands each item to the event loop as soon as
it is made; when the consumer stops early (the client went away), the thread is told to
stop and closes the iterator after its current item, which ends the answer's work.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

__all__ = ["iterate_in_thread", "started"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_END = object()


def started(items: Iterator[T]) -> Iterator[T]:
    """``items`` with its first item made now: what it refuses before its first item
    (an answer's unknown mode, a setting its index refuses) raises here, before a response
    is begun. Closing the result closes ``items``."""
    first = next(items)

    def rest() -> Iterator[T]:
        try:
            yield first
            yield from items
        finally:  # closed at its first item too, which ``yield from`` would not pass on
            close = getattr(items, "close", None)
            if close is not None:
                close()

    return rest()


async def iterate_in_thread(
    items: Iterator[T], name: str = "ragloom-answer", on_end: Callable[[], None] | None = None
) -> AsyncIterator[T]:
    """The items of ``items``, made on a thread of their own; an exception it raises is
    raised here. Closing this generator stops and closes ``items``; ``on_end`` is called
    on that thread once ``items`` is closed (the work has ended, which may be after this
    generator was closed)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()
    stop = threading.Event()

    def put(item: object) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop closed (the server stopped): nobody is listening
            stop.set()

    def run() -> None:
        try:
            for item in items:
                put(item)
                if stop.is_set():
                    break
        except BaseException as exc:  # handed to the consumer, who raises it
            put(_Failed(exc))
        finally:
            try:
                close = getattr(items, "close", None)
                if close is not None:
                    close()
            finally:
                if on_end is not None:
                    on_end()
                put(_END)

    thread = threading.Thread(target=run, name=name, daemon=True)
    try:
        thread.start()
    except BaseException:  # "can't start new thread": nothing ran, nothing will end it
        if on_end is not None:
            on_end()
        raise
    try:
        while True:
            item = await queue.get()
            if item is _END:
                return
            if isinstance(item, _Failed):
                raise item.exc
            yield item  # type: ignore[misc]
    finally:
        stop.set()


class _Failed:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
