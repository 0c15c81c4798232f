"""The index manager: one live object per index in the database, started as it appears.

A real app (SQLite, hash embeddings, a replay LLM) and an index type whose start blocks
until the test lets it go, standing for a store server that is away (its timeout).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlmodel import Session

from ragloom_app.db.models import IndexRecord
from ragloom_app.index.base import BaseIndex
from ragloom_app.index.manager import new_store_name
from tests.helpers.api_server import replay_app

GUARD_SECONDS = 30  # only so that a regression fails instead of hanging the run


class BlockedIndex(BaseIndex):
    """An index whose start waits for ``release`` (class-wide, set per test)."""

    starting = threading.Event()
    release = threading.Event()
    started = threading.Event()
    starts = 0

    def on_start(self) -> None:
        type(self).starts += 1
        type(self).starting.set()
        type(self).release.wait(GUARD_SECONDS)
        type(self).started.set()


TYPE_ID = f"{BlockedIndex.__module__}.{BlockedIndex.__qualname__}"


def test_a_healthy_index_is_got_while_another_index_is_starting(tmp_path: Path) -> None:
    """Before, refresh() started an index under the manager's lock: every get() in the
    process waited out a failing store's timeout; and a second refresh meanwhile must not
    start the same index again."""
    app = replay_app(tmp_path)
    app.indices.register_type(TYPE_ID, BlockedIndex)
    BlockedIndex.starting, BlockedIndex.release = threading.Event(), threading.Event()
    BlockedIndex.started = threading.Event()
    BlockedIndex.starts = 0
    with Session(app.engine) as session:  # created by another process
        session.add(IndexRecord(name="Slow", index_type=TYPE_ID, store_name=new_store_name()))
        session.commit()
    refreshing = threading.Thread(target=app.indices.refresh)
    refreshing.start()
    assert BlockedIndex.starting.wait(GUARD_SECONDS)
    got_slow: list[BaseIndex] = []
    waiting = threading.Thread(target=lambda: got_slow.append(app.indices.get("Slow")))
    try:
        waiting.start()
        assert app.indices.get("My files").name == "My files"
        app.indices.refresh()  # another listing: leaves the start to the first
        assert not BlockedIndex.started.is_set(), "get() waited for the other's start"
        assert BlockedIndex.starts == 1 and not got_slow  # get("Slow") waits for its start
    finally:
        BlockedIndex.release.set()
        refreshing.join()
        waiting.join()
    (slow,) = got_slow
    assert slow is app.indices.get("Slow") and BlockedIndex.starts == 1
    assert [index.name for index in app.indices.indices] == ["My files", "Slow"]


def test_an_index_created_while_a_refresh_read_the_rows_is_not_taken_for_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refresh read the rows before the index was created, and took the index it did
    not find there as deleted elsewhere: a listing then missed it until a later refresh
    started it again (an upload right after creating its index was a 404)."""
    app = replay_app(tmp_path)
    manager = app.indices
    read = manager._records
    rows_read, go_on = threading.Event(), threading.Event()

    def read_then_wait() -> list[IndexRecord]:
        rows = read()
        rows_read.set()
        go_on.wait(GUARD_SECONDS)
        return rows

    monkeypatch.setattr(manager, "_records", read_then_wait)
    refreshing = threading.Thread(target=manager.refresh)
    refreshing.start()
    assert rows_read.wait(GUARD_SECONDS)
    monkeypatch.setattr(manager, "_records", read)  # the create's own look is fresh
    created = manager.create("Made meanwhile", "ragloom_app.index.file.FileIndex")
    go_on.set()
    refreshing.join(GUARD_SECONDS)
    with manager._lock:  # as the refresh left it, before any other refresh
        live = [index.name for index in manager._indices.values()]
    assert created.name in live
