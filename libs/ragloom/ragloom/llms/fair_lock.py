"""A lock taken in the order it was asked for: :class:`FairLock`.

``threading.Lock`` promises no order, so with one local model and many waiting answers a
late question can overtake one that has waited minutes. A ticket lock serves them first
come, first served, and knows how many are in line, which the UI tells the user ("waiting
its turn").
"""

from __future__ import annotations

import threading
from types import TracebackType

__all__ = ["FairLock"]


class FairLock:
    """A non-reentrant mutual-exclusion lock granted in FIFO order."""

    def __init__(self) -> None:
        self._turns = threading.Condition()
        self._next_ticket = 0
        self._serving = 0
        self._abandoned: set[int] = set()

    @property
    def in_line(self) -> int:
        """Callers holding or waiting for the lock (0: free, nobody waiting)."""
        with self._turns:
            return self._next_ticket - self._serving - len(self._abandoned)

    def acquire(self) -> None:
        """Wait for this caller's turn. A wait cut short (an interrupt) gives its turn up."""
        with self._turns:
            ticket = self._next_ticket
            self._next_ticket += 1
            try:
                while ticket != self._serving:
                    self._turns.wait()
            except BaseException:
                self._abandoned.add(ticket)
                self._skip_abandoned()
                raise

    def release(self) -> None:
        """Hand the lock to the next in line."""
        with self._turns:
            self._serving += 1
            self._skip_abandoned()
            self._turns.notify_all()

    def _skip_abandoned(self) -> None:
        while self._serving in self._abandoned:
            self._abandoned.discard(self._serving)
            self._serving += 1
        self._turns.notify_all()

    def __enter__(self) -> FairLock:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()
