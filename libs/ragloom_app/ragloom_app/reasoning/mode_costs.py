"""What a mode is expected to cost per question, in LLM tokens: ``auto`` asks before it
escalates, so that a second try starts only when it fits the question's token budget."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping

__all__ = ["MEASURED_TOKENS", "UNKNOWN_MODE_TOKENS", "ModeCosts"]

MEASURED_TOKENS: Mapping[str, int] = {
    "fullqa": 360,
    "rewoo": 1000,
    "decompose": 1200,
    "react": 1700,
}
"""Tokens per question (prompt plus completion, every call) of the built-in modes with the
bundled 0.5B model, rounded up from docs/performance.md: the estimate before a mode has
answered anything in this process."""

UNKNOWN_MODE_TOKENS = 1500
"""The estimate for a mode never measured (a plugin's) until it has answered once."""


class ModeCosts:
    """Tokens each mode spent on its last ``window`` questions, as ``auto`` ran them.

    :meth:`expected` is their mean, or the measured figure until there is one: a mode that
    costs more on this deployment (a larger model, longer passages) is soon estimated so.
    Shared by the requests of one process, so it is thread-safe.
    """

    def __init__(self, window: int = 20, prior: Mapping[str, int] = MEASURED_TOKENS) -> None:
        if window < 1:
            raise ValueError("window must be at least 1")
        self._window = window
        self._prior = dict(prior)
        self._spent: dict[str, deque[int]] = {}
        self._lock = threading.Lock()

    def record(self, mode: str, tokens: int) -> None:
        """Note that ``mode`` spent ``tokens`` on one question."""
        with self._lock:
            self._spent.setdefault(mode, deque(maxlen=self._window)).append(max(0, tokens))

    def expected(self, mode: str) -> int:
        """The tokens ``mode`` is expected to spend on a question."""
        with self._lock:
            spent = self._spent.get(mode)
            if spent:
                return round(sum(spent) / len(spent))
        return self._prior.get(mode, UNKNOWN_MODE_TOKENS)
