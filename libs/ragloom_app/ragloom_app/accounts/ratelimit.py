"""Failed logins, counted per account and per address, in a sliding window.

Past ``max_failures`` failures within ``window`` seconds, a key (an account name, a
client address) is refused until its oldest failure leaves the window. A success does not
wipe earlier failures (an attacker with one right password would reset the count); it
takes back the attempt it counted. The table is bounded: past ``max_keys`` keys, the one idle
longest is forgotten.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

__all__ = ["FailureLimiter"]


class FailureLimiter:
    """Counts failures per key; :meth:`retry_after` says how long a key must wait."""

    def __init__(
        self,
        max_failures: int,
        window: float,
        *,
        max_keys: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.window = window
        self.max_keys = max_keys
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def _recent(self, key: str, now: float) -> deque[float]:
        failures = self._failures.get(key)
        if failures is None:
            return deque()
        while failures and failures[0] <= now - self.window:
            failures.popleft()
        return failures

    def retry_after(self, key: str) -> float:
        """Seconds until ``key`` may try again (0: now)."""
        with self._lock:
            now = self._clock()
            failures = self._recent(key, now)
            if len(failures) < self.max_failures:
                return 0.0
            return max(0.0, failures[0] + self.window - now)

    def failed(self, key: str) -> None:
        """Count one failure of ``key``."""
        with self._lock:
            now = self._clock()
            failures = self._recent(key, now)
            failures.append(now)
            self._failures[key] = failures
            self._failures.move_to_end(key)
            while len(self._failures) > self.max_keys:
                self._failures.popitem(last=False)

    def clear(self, key: str) -> None:
        """Forget ``key``'s failures."""
        with self._lock:
            self._failures.pop(key, None)

    def forgive(self, key: str) -> None:
        """Take back ``key``'s latest failure (an attempt counted before it succeeded)."""
        with self._lock:
            failures = self._failures.get(key)
            if failures:
                failures.pop()
