"""Recovery at start: what a process cut short left is finished, work of a live one is not.

The states are made by the real pipeline, stopped at the point under test by an exception
no handler catches (as a crash stops it); its lock is released as the kernel releases a
dead process's lock. The SIGKILL of a real process is in tests/e2e/test_crash_recovery.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlmodel import Session, select

from ragloom_app.app import BaseApp
from ragloom_app.db.models import ChunkRecord, Source
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.pipeline import INTERRUPTED_REASON
from ragloom_app.index.file.worklock import WorkLock
from ragloom_app.settings import AppSettings

REACTOR = "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin.\n\nIt was built in Lund in 2019.\n"


class Crash(BaseException):
    """Stops the pipeline where a crash would: nothing in it catches a BaseException."""


def _start(data_dir: Path) -> FileIndex:
    """Start the app (again) over ``data_dir``: its indices recover on start."""
    (index,) = BaseApp(AppSettings(data_dir=data_dir)).start().indices.indices
    assert isinstance(index, FileIndex)
    return index


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def upload(tmp_path: Path) -> Path:
    path = tmp_path / "reactor.md"
    path.write_text(REACTOR)
    return path


def _crash_before_the_flip(index: FileIndex, upload: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Index ``upload`` and stop after the stores are written, before the status flip."""
    pipeline = index.get_indexing_pipeline({})
    monkeypatch.setattr(pipeline, "_flip", _raiser("_flip"))
    with pytest.raises(Crash):
        pipeline.run([upload])
    (source,) = index.list_sources()
    assert source["status"] == "indexing"
    return str(source["id"])


def _raiser(name: str) -> Callable[..., None]:
    def crash(*args: object, **kwargs: object) -> None:
        raise Crash(name)

    return crash


def _store_ids(index: FileIndex) -> tuple[set[str], set[str], set[str]]:
    with Session(index.resources.engine) as session:
        rows = set(session.exec(select(ChunkRecord.id)))
    return rows, index.vector_store.ids(), index.fulltext_store.ids()


def test_a_file_cut_short_after_the_store_writes_is_indexed_again_at_start(
    data_dir: Path, upload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _start(data_dir)
    source_id = _crash_before_the_flip(index, upload, monkeypatch)
    # The state a crash leaves: chunks in both stores, none recorded, status indexing.
    rows, vectors, terms = _store_ids(index)
    assert rows == set() and vectors == terms and len(vectors) >= 1

    index = _start(data_dir)
    (source,) = index.list_sources()
    assert (source["id"], source["status"], source["reason"]) == (source_id, "indexed", None)
    rows, vectors, terms = _store_ids(index)
    assert rows == vectors == terms and len(rows) == source["chunks"]
    assert index.check().clean
    (hit, *_) = index.get_retriever_pipelines({})[0]("Zorblax reactor temperature", top_k=3)
    assert hit.chunk.source_id == source_id and "451 kelvin" in hit.chunk.text


def test_without_its_stored_copy_the_file_is_failed_with_the_reason(
    data_dir: Path, upload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _start(data_dir)
    _crash_before_the_flip(index, upload, monkeypatch)
    for stored in (index.resources.data_dir / "files").iterdir():
        stored.unlink()

    index = _start(data_dir)
    (source,) = index.list_sources()
    assert (source["status"], source["reason"]) == ("failed", INTERRUPTED_REASON)
    assert _store_ids(index) == (set(), set(), set())
    assert index.check().clean
    assert index.get_retriever_pipelines({})[0]("Zorblax reactor", top_k=3) == []
    # Adding the file again works: the failed row gives way to a new one.
    (outcome,) = index.get_indexing_pipeline({}).run([upload])
    assert outcome.status == "indexed"
    assert [s["status"] for s in index.list_sources()] == ["indexed"]


def test_a_removal_cut_short_is_finished_at_start(
    data_dir: Path, upload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _start(data_dir)
    index.get_indexing_pipeline({}).run([upload])
    pipeline = index.get_indexing_pipeline({})
    monkeypatch.setattr(pipeline, "_remove_from_stores", _raiser("_remove_from_stores"))
    (source,) = index.list_sources()
    with pytest.raises(Crash):
        pipeline.remove(str(source["id"]))
    assert [s["status"] for s in index.list_sources()] == ["removing"]

    index = _start(data_dir)
    assert index.list_sources() == []
    assert _store_ids(index) == (set(), set(), set())
    assert list((index.resources.data_dir / "files").iterdir()) == []
    assert index.check().clean


def test_a_file_a_live_process_is_indexing_is_left_alone(
    data_dir: Path, upload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _start(data_dir)
    source_id = _crash_before_the_flip(index, upload, monkeypatch)
    # Held as the process indexing it would hold it (flock: separate opens exclude).
    worker = WorkLock(index.resources.data_dir / "locks", source_id)
    assert worker.acquire(blocking=False)
    try:
        index = _start(data_dir)
        assert [s["status"] for s in index.list_sources()] == ["indexing"]
        report = index.check(repair=True)
        assert report.clean, report.problems  # its chunks in the stores are not "extra"
        assert report.notes == ["1 files are being worked on now: 'reactor.md'"]
        assert len(index.vector_store.ids()) >= 1
        # The same content uploaded meanwhile is not indexed twice.
        (outcome,) = index.get_indexing_pipeline({}).run([upload])
        assert outcome.status == "skipped" and "being indexed right now" in outcome.reason
    finally:
        worker.release()
    (problem,) = index.check().problems
    assert (problem.kind, problem.ids) == ("interrupted", [source_id])
    assert index.check(repair=True).ok
    assert [s["status"] for s in index.list_sources()] == ["indexed"]
    assert index.check().clean


def test_leftovers_of_dead_processes_are_removed_and_live_ones_kept(data_dir: Path) -> None:
    index = _start(data_dir)
    folder = index.resources.data_dir
    (folder / "files").mkdir(parents=True)
    dead_partial = folder / "files" / ".deadbeef.partial"
    live_partial = folder / "files" / ".cafe.partial"
    dead_archive = folder / "tmp" / "archive-dead"
    live_archive = folder / "tmp" / "archive-live"
    for path in (dead_partial, live_partial, dead_archive / "0001-a.md", live_archive / "x"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("half written")
    locks = folder / "locks"
    with WorkLock(locks, "cafe"), WorkLock(locks, "archive-live"):
        index = _start(data_dir)
        assert not dead_partial.exists() and not dead_archive.exists()
        assert live_partial.exists() and live_archive.exists()
    assert not list(locks.iterdir())


def test_an_index_with_nothing_to_recover_starts_without_touching_its_stores(
    data_dir: Path, upload: Path
) -> None:
    index = _start(data_dir)
    index.get_indexing_pipeline({}).run([upload])
    before = _store_ids(index)
    index = _start(data_dir)
    assert _store_ids(index) == before
    with Session(index.resources.engine) as session:
        assert [s.status for s in session.exec(select(Source))] == ["indexed"]
