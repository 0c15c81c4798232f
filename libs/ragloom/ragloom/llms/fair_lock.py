"""Locks taken in the order they were asked for: :class:`FairSemaphore`, and
:class:`FairLock`, its one-slot case.

``threading.Lock`` and ``threading.Semaphore`` promise no order: with one local model (or an
endpoint's few request slots) and many waiting answers, a late question can overtake one
that has waited minutes, and a thread calling back to back can keep a slot from a waiter
until the waiter's time runs out. A ticket line serves them first come, first served, and
knows how many are in it, which the UI tells the user ("waiting its turn").
"""

from __future__ import annotations

import threading
import time
from collections import deque
from types import TracebackType

__all__ = ["FairLock", "FairSemaphore"]


class FairSemaphore:
    """At most ``slots`` holders at once, the slots granted in FIFO order."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError(f"a semaphore needs at least 1 slot, not {slots}")
        self.slots = slots
        self._turns = threading.Condition()
        self._held = 0
        self._line: deque[int] = deque()
        self._next_ticket = 0

    @property
    def in_line(self) -> int:
        """Callers holding or waiting for a slot (0: all free, nobody waiting)."""
        with self._turns:
            return self._held + len(self._line)

    def acquire(self, timeout: float | None = None) -> bool:
        """Wait for this caller's turn and a free slot: ``True`` once it holds one,
        ``False`` if ``timeout`` seconds passed first. A wait cut short (a timeout, an
        interrupt) gives its place in line up."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._turns:
            ticket = self._next_ticket
            self._next_ticket += 1
            self._line.append(ticket)
            try:
                while self._line[0] != ticket or self._held >= self.slots:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        self._leave(ticket)
                        return False
                    self._turns.wait(left)
            except BaseException:
                self._leave(ticket)
                raise
            self._line.popleft()
            self._held += 1
            self._turns.notify_all()  # the next in line may find a free slot too
            return True

    def release(self) -> None:
        """Give a slot back, to the first in line."""
        with self._turns:
            if self._held < 1:
                raise RuntimeError("released more often than acquired")
            self._held -= 1
            self._turns.notify_all()

    def _leave(self, ticket: int) -> None:
        self._line.remove(ticket)
        self._turns.notify_all()

    def __enter__(self) -> FairSemaphore:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


class FairLock(FairSemaphore):
    """A non-reentrant mutual-exclusion lock granted in FIFO order."""

    def __init__(self) -> None:
        super().__init__(1)
