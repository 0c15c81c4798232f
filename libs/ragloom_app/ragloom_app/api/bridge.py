"""A blocking iterator (an answer's events) consumed by async code, on one thread.

An answer is made by blocking code (the LLM, the stores), and some of it must stay on one
thread from start to end (a model is locked for a whole generation). :func:`iterate_in_thread`
runs the iterator on a thread of its own and hands each item to the event loop as soon as
it is made; when the consumer stops early (the client went away), the thread is told to
stop and closes the iterator after its current item, which ends the answer's work.
:func:`collect_in_thread` does the same for an answer sent whole: it gathers the items,
and stops them when the client leaves first.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

import anyio
from starlette.types import Receive

__all__ = ["client_left", "close_items", "collect_in_thread", "iterate_in_thread", "started"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_END = object()


def started(items: Iterator[T]) -> Iterator[T]:
    """``items`` with its first item made now: what it refuses before its first item
    (an answer's unknown mode, a setting its index refuses) raises here, before a response
    is begun. Closing the result closes ``items``, read or not."""
    return _Started(next(items), items)


class _Started(Iterator[T]):
    """:func:`started`'s result: its first item, then the rest of ``items``. Not a
    generator: a generator closed before its first step runs none of its code, and would
    leave ``items`` (an answer holding its conversation) open for the garbage collector."""

    def __init__(self, first: T, items: Iterator[T]) -> None:
        self._first: list[T] = [first]
        self._items = items

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        if self._first:
            return self._first.pop()
        return next(self._items)

    def close(self) -> None:
        """Close ``items``; nothing more is made."""
        self._first.clear()
        close_items(self._items)


def close_items(items: Iterator[object]) -> None:
    """Close ``items`` if it can be closed (a generator: its ``finally`` runs now)."""
    close = getattr(items, "close", None)
    if close is not None:
        close()


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
                close_items(items)
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


async def client_left(receive: Receive) -> None:
    """Return once the client of ``receive`` (the ASGI ``receive`` of a request whose body
    was read) has gone: the server says so with ``http.disconnect``."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def collect_in_thread(
    items: Iterator[T], receive: Receive, on_end: Callable[[], None] | None = None
) -> list[T] | None:
    """Every item of ``items``, made on a thread of their own as :func:`iterate_in_thread`
    makes them (an exception they raise is raised here; ``on_end`` as there); ``None`` if
    the client of ``receive`` leaves first: ``items`` is then stopped and closed after its
    current item, as a stream's answer is, instead of running on for nobody."""
    made: list[T] = []
    failure: Exception | None = None
    left = False
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            nonlocal left
            await client_left(receive)
            left = True
            group.cancel_scope.cancel()

        group.start_soon(watch)
        try:
            # The thread starts at the first step, before ``watch`` can run: from then on
            # it owns ``items``, and the cancel below stops it (iterate_in_thread's finally).
            async for item in iterate_in_thread(items, on_end=on_end):
                made.append(item)
        except Exception as exc:  # raised below: the group would wrap it in a group
            failure = exc
        group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return None if left else made


class _Failed:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
