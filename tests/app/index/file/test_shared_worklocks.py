"""Work locks of processes with data folders of their own, seen through the database they
share (PostgreSQL advisory locks beside the lock files): each folder below has its own
``AdvisoryLocks`` on its own engine, as two processes would."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import create_engine

from ragloom_app.db.advisory import AdvisoryLocks
from ragloom_app.index.file.worklock import WorkLock, WorkLocks, is_busy
from tests.helpers.postgres import PostgresServer, database

pytestmark = pytest.mark.postgres


@pytest.fixture
def two_folders(postgres_server: PostgresServer, tmp_path: Path) -> Iterator[list[WorkLocks]]:
    with database(postgres_server) as url:
        engines = [create_engine(url), create_engine(url)]
        yield [
            WorkLocks(tmp_path / name, AdvisoryLocks(engine), scope="file-index/1")
            for name, engine in zip(("one", "two"), engines, strict=True)
        ]
        for engine in engines:
            engine.dispose()


def test_a_lock_held_through_one_folder_is_busy_seen_from_the_other(
    two_folders: list[WorkLocks],
) -> None:
    one, two = two_folders
    with one.lock("source-1"):
        assert two.is_busy("source-1")
        refused = two.lock("source-1")
        assert not refused.acquire(blocking=False) and not refused.held
        # Refused, it keeps no lock file of its own either.
        assert not is_busy(two.folder, "source-1")
        assert not (two.folder / "source-1.lock").exists()
        other_index = WorkLocks(two.folder, two.shared, scope="file-index/2")
        assert not other_index.is_busy("source-1")
    assert not two.is_busy("source-1")
    with two.lock("source-1"):
        assert one.is_busy("source-1")


def test_a_blocking_take_waits_for_the_other_folders_holder(two_folders: list[WorkLocks]) -> None:
    one, two = two_folders
    held = one.lock("content-abc")
    assert held.acquire(blocking=False)
    released_at: list[float] = []

    def release_soon() -> None:
        time.sleep(0.3)
        released_at.append(time.monotonic())
        held.release()

    releaser = threading.Thread(target=release_soon)
    releaser.start()
    assert not two.wait_until_free("content-abc", timeout=0.1)
    waiting = two.lock("content-abc")
    assert waiting.acquire()  # blocks until the other folder's holder lets go
    taken_at = time.monotonic()
    releaser.join()
    assert released_at and taken_at >= released_at[0]
    assert one.is_busy("content-abc")
    waiting.release()
    assert one.wait_until_free("content-abc", timeout=1.0)


class _Unreachable:
    """Shared locks whose database cannot be reached."""

    def try_acquire(self, name: str) -> bool:
        raise ConnectionError("the database cannot be reached")

    def release(self, name: str) -> None:
        raise AssertionError("nothing was taken")

    def is_held(self, name: str) -> bool:
        raise ConnectionError("the database cannot be reached")


def test_a_shared_lock_that_cannot_be_taken_leaves_no_file_lock_behind(tmp_path: Path) -> None:
    locks = WorkLocks(tmp_path, _Unreachable(), scope="file-index/1")
    lock = locks.lock("source-1")
    with pytest.raises(ConnectionError):
        lock.acquire()
    assert not lock.held
    assert not is_busy(tmp_path, "source-1") and not (tmp_path / "source-1.lock").exists()


def test_a_shared_lock_must_be_named_across_the_deployment(
    two_folders: list[WorkLocks],
) -> None:
    """A key names work in one index's folder only: shared as it is, the lock on source 1
    of one index would be that of source 1 of every index."""
    one, _ = two_folders
    with pytest.raises(ValueError, match="name across the deployment"):
        WorkLock(one.folder, "source-1", one.shared)
