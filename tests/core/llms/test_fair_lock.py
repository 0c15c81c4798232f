"""The local model's lock serves answers first come, first served, and knows the line."""

from __future__ import annotations

import threading
import time

import pytest

from ragloom.llms.fair_lock import FairLock, FairSemaphore


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


def test_a_thread_calling_back_to_back_cannot_keep_a_slot_from_a_waiter() -> None:
    """An endpoint's request slots (``max_concurrent``): a plain semaphore let one thread
    retake its slot 100 times while a waiter timed out."""
    slots = FairSemaphore(1)
    waiter_in = threading.Event()
    turns_after: list[int] = []
    calls = 0

    def back_to_back() -> None:
        nonlocal calls
        for _ in range(300):
            with slots:
                calls += 1
                if waiter_in.is_set() and not turns_after:
                    turns_after.append(calls)

    slots.acquire()
    caller = threading.Thread(target=back_to_back)
    caller.start()
    _wait_until(lambda: slots.in_line == 2)  # the caller waits for its first turn
    waiter_got = []
    waiter = threading.Thread(
        target=lambda: (
            waiter_got.append(slots.acquire(timeout=5)),
            waiter_in.set(),
            slots.release(),
        )
    )
    waiter.start()
    _wait_until(lambda: slots.in_line == 3)
    slots.release()
    waiter.join(timeout=10), caller.join(timeout=10)
    # The waiter came second in line: it was served after the caller's first call.
    assert waiter_got == [True] and turns_after and turns_after[0] <= 2


def test_a_wait_past_its_timeout_leaves_the_line_and_slots_serve_in_order() -> None:
    slots = FairSemaphore(2)
    assert slots.acquire() and slots.acquire()
    started = time.monotonic()
    assert slots.acquire(timeout=0.2) is False
    assert time.monotonic() - started >= 0.2 and slots.in_line == 2
    served: list[int] = []
    threads = []
    for n in range(4):
        thread = threading.Thread(target=lambda n=n: (slots.acquire(), served.append(n)))
        thread.start()
        threads.append(thread)
        _wait_until(lambda n=n: slots.in_line == n + 3)
    # A slot at a time, so that each grant is seen before the next is made.
    for expected in ([0], [0, 1], [0, 1, 2]):
        slots.release()
        _wait_until(lambda expected=expected: len(served) == len(expected))
        assert served == expected
    slots.release()
    for thread in threads:
        thread.join(timeout=10)
    assert served == [0, 1, 2, 3] and slots.in_line == 2
    with pytest.raises(ValueError, match="at least 1 slot"):
        FairSemaphore(0)
