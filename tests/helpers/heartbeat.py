"""A heartbeat thread: proof that the process kept serving while something hostile ran.

Work that holds the GIL in C (a giant integer, a regex gone quadratic) pauses every thread
of its process. A :class:`Heartbeat` ticks every ``interval`` seconds and records the
longest gap between two ticks; a test runs the hostile input inside ``with Heartbeat() as
beat:`` and asserts ``beat.longest_pause < 0.5``.

``longest_pause`` is wall time, which on a loaded machine also counts the time the OS
kept the whole process waiting for a core. ``longest_held_pause`` counts, of each gap, only
as much as the process ran meanwhile (its CPU time over the gap, at most the gap): what
another thread of it ran while the heartbeat could not (a GIL held in C), whatever else
the machine was doing. Judge by it where the machine may be loaded: a sandbox worker,
whose own threads are what its heartbeat watches, and the app's own writes to Chroma.
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
        self.longest_held_pause = 0.0
        self.ticks = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="heartbeat", daemon=True)

    def _beat(self) -> None:
        last, last_cpu = time.perf_counter(), time.process_time()
        while not self._stop.wait(self.interval):
            now, now_cpu = time.perf_counter(), time.process_time()
            self.longest_pause = max(self.longest_pause, now - last)
            # The process's CPU time over the gap (the heartbeat's own is next to
            # nothing): what other threads ran while this one waited for the GIL. Native
            # threads (Chroma's) may add up to more than the gap: count the gap at most.
            held = min(now - last, now_cpu - last_cpu)
            self.longest_held_pause = max(self.longest_held_pause, held)
            self.ticks += 1
            last, last_cpu = now, now_cpu

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
