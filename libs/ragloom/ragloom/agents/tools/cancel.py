"""Cooperative cancellation of the tool calls that run in a thread of the agent's process.

A thread cannot be stopped from outside. So when a call of an in-process tool (one with
``sandboxed = False``: ``docsearch``, ``llm``) runs past its timeout, the
:class:`~ragloom.agents.tools.runner.ToolRunner` sets the call's cancellation flag and
waits a short grace; the tool is expected to look at the flag between pieces of its work
and stop: :func:`raise_if_cancelled` raises :class:`ToolCancelled`, which ends the call as
a timeout (a tool that checks :func:`cancel_requested` itself returns a failed result). A
successful result that arrives within the grace is the call's result after all. A tool
that does not stop is left running, and the runner logs a warning naming it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["ToolCancelled", "cancel_requested", "cancellable", "raise_if_cancelled"]

_FLAG: ContextVar[threading.Event | None] = ContextVar("ragloom_tool_cancel", default=None)


class ToolCancelled(Exception):
    """Raised by :func:`raise_if_cancelled` in a call that was told to stop."""


def cancel_requested() -> bool:
    """Whether the tool call running in this thread was told to stop (its timeout passed)."""
    flag = _FLAG.get()
    return flag is not None and flag.is_set()


def raise_if_cancelled() -> None:
    """Raise :class:`ToolCancelled` if the call running in this thread was told to stop."""
    if cancel_requested():
        raise ToolCancelled("the tool call was cancelled: it ran past its time limit")


@contextmanager
def cancellable(flag: threading.Event) -> Iterator[None]:
    """Within the block, :func:`cancel_requested` in this thread reads ``flag``."""
    token = _FLAG.set(flag)
    try:
        yield
    finally:
        _FLAG.reset(token)
