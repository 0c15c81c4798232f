"""The sandbox: work in limited worker processes, killed at its timeout, never freezing us."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom import sandbox_workers
from ragloom.sandbox import (
    Sandbox,
    SandboxCrash,
    SandboxLimits,
    SandboxMemoryError,
    SandboxRaised,
    SandboxStopped,
    SandboxTimeout,
    SandboxTransferError,
    configure_sandbox,
    get_sandbox,
)
from tests.helpers.heartbeat import Heartbeat

pytestmark = pytest.mark.security


def add(a: int, b: int) -> int:
    return a + b


def worker_pid() -> int:
    return os.getpid()


def giant_integer() -> int:
    # CPython builds 10**(10**8) while holding the GIL: minutes, and no thread runs.
    return round(5, -(10**8))


def segfault() -> None:
    ctypes.string_at(0)


def allocate(n_bytes: int) -> int:
    return len(bytearray(n_bytes))


def write_file(path: str, n_bytes: int) -> None:
    with open(path, "wb") as handle:
        handle.write(b"x" * n_bytes)


class TwoArgumentError(Exception):
    def __init__(self, first: int, second: int) -> None:
        super().__init__(f"{first} and {second}")


def raise_two_argument_error() -> None:
    raise TwoArgumentError(1, 2)


def raise_value_error() -> None:
    raise ValueError("not a number")


def raise_huge_error() -> None:
    raise ValueError("x" * (10 << 20))


def sleep_for(seconds: float) -> None:
    time.sleep(seconds)


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox("test", SandboxLimits(workers=1, memory_bytes=512 << 20, file_bytes=1 << 20))
    yield box
    box.close()


def test_a_call_returns_its_value(sandbox: Sandbox) -> None:
    assert sandbox.run(add, 2, 3, timeout=30) == 5
    assert sandbox.run(worker_pid, timeout=30) != os.getpid()


def test_a_runaway_call_is_killed_at_its_timeout_and_the_caller_never_pauses(
    sandbox: Sandbox,
) -> None:
    sandbox.run(add, 0, 0, timeout=30)  # the worker is up: time only the call itself
    pid = sandbox.run(worker_pid, timeout=30)
    started = time.perf_counter()
    with Heartbeat() as beat, pytest.raises(SandboxTimeout, match="1 s"):
        sandbox.run(giant_integer, timeout=1.0)
    elapsed = time.perf_counter() - started
    assert elapsed < 5
    assert beat.longest_pause < 0.5
    # Nothing keeps running: the worker that ran it is gone, a fresh one serves.
    deadline = time.monotonic() + 5
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}")
    assert sandbox.run(add, 1, 1, timeout=30) == 2


def test_a_crash_fails_the_call_alone(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxCrash, match="SIGSEGV"):
        sandbox.run(segfault, timeout=30)
    assert sandbox.run(add, 1, 2, timeout=30) == 3


def test_memory_past_the_limit_is_refused(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxMemoryError, match="512 MiB"):
        sandbox.run(allocate, 2 << 30, timeout=30)
    assert sandbox.run(allocate, 1 << 20, timeout=30) == 1 << 20


def test_files_past_the_limit_cannot_be_written(sandbox: Sandbox, tmp_path) -> None:
    target = tmp_path / "big"
    with pytest.raises(OSError):
        sandbox.run(write_file, str(target), 2 << 20, timeout=30)
    assert target.stat().st_size <= 1 << 20


def test_exceptions_come_back_as_raised(sandbox: Sandbox) -> None:
    with pytest.raises(ValueError, match="not a number"):
        sandbox.run(raise_value_error, timeout=30)
    # One that cannot be rebuilt from its arguments still comes back, named.
    with pytest.raises(SandboxRaised, match="TwoArgumentError: 1 and 2"):
        sandbox.run(raise_two_argument_error, timeout=30)


def test_an_exit_from_the_work_ends_the_call_not_the_caller(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxRaised, match="SystemExit: 3"):
        sandbox.run(sys.exit, 3, timeout=30)
    assert sandbox.run(add, 1, 1, timeout=30) == 2


def test_an_exception_is_bounded_like_a_result(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxRaised) as raised:
        sandbox.run(raise_huge_error, timeout=30)
    assert len(str(raised.value)) < 2100 and str(raised.value).endswith("…")


def test_a_call_running_when_its_sandbox_is_closed_ends_at_once(sandbox: Sandbox) -> None:
    sandbox.run(add, 0, 0, timeout=30)
    closer = threading.Timer(0.5, sandbox.close)
    closer.start()
    started = time.perf_counter()
    with pytest.raises(SandboxStopped, match="stopped while the call ran"):
        sandbox.run(sleep_for, 60, timeout=60)
    assert time.perf_counter() - started < 10
    closer.join()


def test_configuring_a_sandbox_changes_only_what_is_named() -> None:
    kind = SandboxLimits(workers=1, tasks_per_worker=7, preload=("json",))
    box = get_sandbox("configured", kind)
    try:
        configure_sandbox("configured", memory_bytes=256 << 20)
        limits = get_sandbox("configured").limits
        assert (limits.memory_bytes, limits.tasks_per_worker, limits.preload) == (
            256 << 20,
            7,
            ("json",),
        )
    finally:
        box.close()
        get_sandbox("configured").close()


def test_configuring_a_sandbox_before_its_first_use_keeps_the_kinds_defaults() -> None:
    configure_sandbox("configured-early", memory_bytes=256 << 20)
    kind = SandboxLimits(workers=1, tasks_per_worker=7, preload=("json",))
    box = get_sandbox("configured-early", kind)
    try:
        assert (box.limits.memory_bytes, box.limits.tasks_per_worker) == (256 << 20, 7)
        assert box.limits.preload == ("json",)
    finally:
        box.close()


def test_what_cannot_cross_fails_its_own_call_and_not_the_pool(sandbox: Sandbox) -> None:
    class Local:
        pass

    with pytest.raises(SandboxTransferError):
        sandbox.run(add, lambda: 1, 2, timeout=30)
    with pytest.raises(SandboxTransferError, match="Local"):
        sandbox.run(add, Local(), 2, timeout=30)
    assert sandbox.run(add, 2, 2, timeout=30) == 4


def imported_at() -> float:
    from tests.helpers.slow_import import IMPORTED_AT

    return IMPORTED_AT


def test_what_a_worker_preloads_is_not_counted_against_a_call() -> None:
    # The module takes 1.5 s to import: as a call's own import it would miss a 1 s limit.
    limits = SandboxLimits(workers=1, preload=("tests.helpers.slow_import", "no.such.module"))
    box = Sandbox("preloaded", limits)
    try:
        box.run(add, 0, 0, timeout=30)  # the worker is up, its preload done
        assert box.run(imported_at, timeout=1.0) < time.time()
    finally:
        box.close()


def test_a_preload_that_raises_at_import_breaks_no_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers fork from one fork server, which dies on any import error but ImportError:
    a module that raises something else (a broken plugin) is left to each worker."""
    (tmp_path / "raises_at_import.py").write_text("raise RuntimeError('a broken plugin')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    box = Sandbox("broken-preload", SandboxLimits(workers=1, preload=("raises_at_import",)))
    other = Sandbox("after-the-broken-one", SandboxLimits(workers=1))
    try:
        assert box.run(add, 1, 2, timeout=30) == 3
        assert other.run(add, 2, 2, timeout=30) == 4
    finally:
        box.close()
        other.close()
    assert "raises_at_import" not in sandbox_workers._PRELOADED


def test_a_result_past_its_size_limit_is_refused() -> None:
    box = Sandbox("small", SandboxLimits(workers=1, result_bytes=1 << 20))
    try:
        with pytest.raises(SandboxTransferError, match="over the 1 MiB limit"):
            box.run(bytes, 2 << 20, timeout=30)
    finally:
        box.close()
