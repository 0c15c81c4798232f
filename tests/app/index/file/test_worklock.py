"""WorkLock: held while a process lives, free the moment it is killed."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ragloom_app.index.file import worklock
from ragloom_app.index.file.worklock import WorkLock, is_busy

HOLDER = """
import sys, time
from pathlib import Path
from ragloom_app.index.file.worklock import WorkLock
lock = WorkLock(Path(sys.argv[1]), "source-1")
assert lock.acquire(blocking=False)
print("held", flush=True)
time.sleep(600)
"""


def test_a_killed_holder_frees_the_lock(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        assert is_busy(tmp_path, "source-1")
        assert not WorkLock(tmp_path, "source-1").acquire(blocking=False)
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    # The kernel dropped the lock; the file it left is taken over and removed.
    assert (tmp_path / "source-1.lock").exists()
    assert not is_busy(tmp_path, "source-1")
    lock = WorkLock(tmp_path, "source-1")
    assert lock.acquire(blocking=False)
    lock.release()
    assert list(tmp_path.iterdir()) == []


def test_two_holders_in_one_process_exclude_each_other(tmp_path: Path) -> None:
    first, second = WorkLock(tmp_path, "k"), WorkLock(tmp_path, "k")
    with first:
        assert first.held and is_busy(tmp_path, "k")
        assert not second.acquire(blocking=False) and not second.held
    assert not is_busy(tmp_path, "k") and not (tmp_path / "k.lock").exists()
    assert second.acquire(blocking=False)
    second.release()


def test_asking_whether_busy_creates_nothing(tmp_path: Path) -> None:
    assert not is_busy(tmp_path / "locks", "nobody")
    assert not (tmp_path / "locks").exists()


def test_a_lock_file_removed_before_it_was_locked_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race of two takers and a releaser: a taker opens the file, the holder releases
    and removes it, then the taker's lock succeeds, on an inode nobody else can open. The
    taker must notice and lock the file at the path, or a third taker gets the work too."""
    real_flock = worklock.fcntl.flock
    removed: list[Path] = []

    def flock_after_the_holder_left(fd: int, operation: int) -> None:
        if not removed:
            path = tmp_path / "k.lock"
            path.unlink()  # what the holder's release does, between our open and our lock
            removed.append(path)
        real_flock(fd, operation)

    monkeypatch.setattr(worklock.fcntl, "flock", flock_after_the_holder_left)
    taker = WorkLock(tmp_path, "k")
    assert taker.acquire(blocking=False)
    monkeypatch.setattr(worklock.fcntl, "flock", real_flock)

    assert removed, "the simulated release did not run"
    assert is_busy(tmp_path, "k")
    assert not WorkLock(tmp_path, "k").acquire(blocking=False)
    taker.release()
    assert not (tmp_path / "k.lock").exists()
