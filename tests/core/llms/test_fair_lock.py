"""The local model's lock serves answers first come, first served, and knows the line."""

from __future__ import annotations

import threading
import time

import pytest

from ragloom.llms.fair_lock import FairLock


def _wait_until(condition, timeout: float = 10) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.005)


def test_waiters_are_served_in_the_order_they_came() -> None:
    lock = FairLock()
    served: list[int] = []
    lock.acquire()  # the answer being generated
    threads = []
    for n in range(6):
        thread = threading.Thread(
            target=lambda n=n: (lock.acquire(), served.append(n), lock.release())
        )
        thread.start()
        threads.append(thread)
        _wait_until(lambda n=n: lock.in_line == n + 2)  # each is in line before the next comes
    assert lock.in_line == 7
    lock.release()
    for thread in threads:
        thread.join(timeout=10)
    assert served == [0, 1, 2, 3, 4, 5] and lock.in_line == 0


def test_a_waiter_that_gives_up_does_not_block_the_line() -> None:
    lock = FairLock()
    lock.acquire()
    quitting_ready = threading.Event()

    class GaveUp(Exception):
        pass

    def quit_while_waiting() -> None:
        # Interrupted inside the wait, as KeyboardInterrupt would: simulated by a
        # condition whose wait raises once.
        original = lock._turns.wait

        def interrupted(timeout: float | None = None) -> bool:
            lock._turns.wait = original  # type: ignore[method-assign]
            quitting_ready.set()
            raise GaveUp

        lock._turns.wait = interrupted  # type: ignore[method-assign]
        with pytest.raises(GaveUp):
            lock.acquire()

    quitter = threading.Thread(target=quit_while_waiting)
    quitter.start()
    quitter.join(timeout=10)
    assert quitting_ready.is_set() and lock.in_line == 1
    after: list[str] = []
    waiter = threading.Thread(
        target=lambda: (lock.acquire(), after.append("served"), lock.release())
    )
    waiter.start()
    _wait_until(lambda: lock.in_line == 2)
    lock.release()
    waiter.join(timeout=10)
    assert after == ["served"] and lock.in_line == 0
