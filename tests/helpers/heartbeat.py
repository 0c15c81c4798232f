"""A heartbeat thread: proof that the process kept serving while something hostile ran.

Work that holds the GIL in C (a giant integer, a regex gone quadratic) pauses every thread
of its process. A :class:`Heartbeat` ticks every ``interval`` seconds and records the
longest gap between two ticks; a test runs the hostile input inside ``with Heartbeat() as
beat:`` and asserts ``beat.longest_pause < 0.5``.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

__all__ = ["Heartbeat"]


class Heartbeat:
    """Ticks in a daemon thread while the ``with`` block runs; see :attr:`longest_pause`."""

    def __init__(self, interval: float = 0.01) -> None:
        self.interval = interval
        self.longest_pause = 0.0
        self.ticks = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="heartbeat", daemon=True)

    def _beat(self) -> None:
        last = time.perf_counter()
        while not self._stop.wait(self.interval):
            now = time.perf_counter()
            self.longest_pause = max(self.longest_pause, now - last)
            self.ticks += 1
            last = now

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
