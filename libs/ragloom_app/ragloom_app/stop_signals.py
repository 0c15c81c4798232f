"""Stop signals that end a long command the way Ctrl-C does, and the sections they wait for.

By default SIGTERM (``docker stop``, systemd) and SIGHUP (a closed ssh session) end a
process at once, so nothing it began is cleaned up: an import killed so left half an index
that was listed and searched. While :func:`stop_signals_raise` is in force (in the main
thread of a command), they raise :class:`StopRequested` instead, and the command's own
clean-up runs; Ctrl-C (SIGINT) raises ``KeyboardInterrupt`` as ever. A step that a stop
must not cut in two (making an index and marking it as being imported; the clean-up
itself) runs inside :func:`stop_deferred`: a stop that comes meanwhile, Ctrl-C included,
is raised once the step is over. Outside a command that asked for them, both are no-ops,
so library code may mark its sections freely.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType

__all__ = ["StopRequested", "stop_deferred", "stop_signals_raise"]

#: What stops a command as Ctrl-C does: `docker stop`, systemd, a closed ssh session.
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class StopRequested(BaseException):
    """A stop signal arrived. A BaseException, as KeyboardInterrupt is: nothing that
    catches ``Exception`` on the way swallows it."""

    def __init__(self, number: int) -> None:
        super().__init__(signal.Signals(number).name)
        self.number = number


@dataclass
class _StopState:
    """The main thread's stop: whether handlers are in force, the signal that came, whether
    it was raised, and how many deferred sections are open."""

    armed: bool = False
    pending: int | None = None
    raised: bool = False
    deferring: int = 0


_state = _StopState()


def _raise_pending() -> None:
    if _state.pending is not None and not _state.raised:
        _state.raised = True
        if _state.pending == signal.SIGINT:
            raise KeyboardInterrupt  # what Ctrl-C has always raised: click's "Aborted!"
        raise StopRequested(_state.pending)


@contextlib.contextmanager
def stop_signals_raise() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise :class:`StopRequested` in the main thread,
    and Ctrl-C ``KeyboardInterrupt`` (at once, or at the end of a :func:`stop_deferred`
    section); a second stop while the first is handled is ignored, so a clean-up runs to
    its end. The handlers are given back on exit. A signal ignored (``nohup``) stays
    ignored, and a Ctrl-C handler other than Python's own is left in place; off the main
    thread (where no handler can be set) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(number: int, frame: FrameType | None) -> None:
        if _state.pending is not None:
            return
        _state.pending = number
        if _state.deferring == 0:
            _raise_pending()

    previous = {}
    for number in STOP_SIGNALS:
        if signal.getsignal(number) is not signal.SIG_IGN:
            previous[number] = signal.signal(number, stop)
    # Python's own Ctrl-C handler raised wherever it came: a second Ctrl-C during an
    # import's clean-up left half an index.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, stop)
    _state.armed, _state.pending, _state.raised = True, None, False
    try:
        yield
    finally:
        _state.armed = False
        for number, handler in previous.items():
            # None: a handler set outside Python, which cannot be set again; the default.
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)


@contextlib.contextmanager
def stop_deferred() -> Iterator[None]:
    """A section a stop signal (Ctrl-C included) must not cut in two: one that comes
    meanwhile is raised when the section ends (unless it ends by an exception, which stops
    the command already). Only the main thread defers; elsewhere, and with no stop
    handlers in force, this does nothing."""
    if not _state.armed or threading.current_thread() is not threading.main_thread():
        yield
        return
    _state.deferring += 1
    try:
        yield
    finally:
        _state.deferring -= 1
    if _state.deferring == 0:
        _raise_pending()
