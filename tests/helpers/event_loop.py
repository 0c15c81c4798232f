"""Run a coroutine to its end from a synchronous test, whatever its thread already runs."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_on_own_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)`` in a thread of its own; what it returns or raises.

    The test's own thread may hold a running event loop that is not the test's:
    pytest-playwright's sync API leaves one in every process that has run a browser test
    (``make test`` runs the suite in several), and ``asyncio.run`` refuses to start there.
    """
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="test-event-loop") as pool:
        return pool.submit(asyncio.run, coroutine).result()
