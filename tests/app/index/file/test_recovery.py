"""Recovery: a start only cleans up; interrupted files are indexed again once, later.

The states are made by the real pipeline, stopped at the point under test by an exception
no handler catches (as a crash stops it); its lock is released as the kernel releases a
dead process's lock. A start (any command) must not index anything again: that is
:meth:`FileIndex.recover`'s work (``ragloom serve`` runs it once it listens) and ``index
check --repair``'s, each at most once per file. The SIGKILL of a real process is in
tests/e2e/test_crash_recovery.py and tests/security/test_crash_loop.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlmodel import Session, select

from ragloom_app.db.models import ChunkRecord, Source
from ragloom_app.index.file import FileIndex, FileIndexingPipeline
from ragloom_app.index.file.pipeline import INTERRUPTED_REASON
from ragloom_app.index.file.recovery import GAVE_UP_REASON, MAX_INDEXING_ATTEMPTS
from ragloom_app.index.file.worklock import WorkLock
from ragloom_app.settings import AppSettings
from tests.helpers.recovery import raw_source, start_app, start_index

WAITING = (
    "interrupted; indexed again when `ragloom serve` starts, or by `ragloom index check --repair`"
)


class Crash(BaseException):
    """Stops the pipeline where a crash would: nothing in it catches a BaseException."""


def _raiser(name: str) -> Callable[..., None]:
    def crash(*args: object, **kwargs: object) -> None:
        raise Crash(name)

    return crash


def _crash_before_the_flip(index: FileIndex, upload: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Index ``upload`` and stop after the stores are written, before the status flip."""
    pipeline = index.get_indexing_pipeline({})
    monkeypatch.setattr(pipeline, "_flip", _raiser("_flip"))
    with pytest.raises(Crash):
        pipeline.run([upload])
    (source,) = index.list_sources()
    assert (source["status"], source["reason"], source["attempts"]) == ("queued", WAITING, 1)
    return str(source["id"])


def _store_ids(index: FileIndex) -> tuple[set[str], set[str], set[str]]:
    with Session(index.resources.engine) as session:
        rows = set(session.exec(select(ChunkRecord.id)))
    return rows, index.vector_store.ids(), index.fulltext_store.ids()


def _count_reingests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every source indexed again, in any pipeline, from now on."""
    calls: list[str] = []
    original = FileIndexingPipeline.reingest

    def counting(self: FileIndexingPipeline, source_id: str, **kwargs: str) -> object:
        calls.append(source_id)
        return original(self, source_id, **kwargs)

    monkeypatch.setattr(FileIndexingPipeline, "reingest", counting)
    return calls


def test_a_start_indexes_nothing_again_and_recover_does(
    settings: AppSettings, upload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = start_index(settings)
    source_id = _crash_before_the_flip(index, upload, monkeypatch)
    # The state a crash leaves: chunks in both stores, none recorded, status indexing.
    crashed = _store_ids(index)
    assert crashed[0] == set() and crashed[1] == crashed[2] and len(crashed[1]) >= 1
    reingests = _count_reingests(monkeypatch)

    index = start_index(settings)
    assert reingests == [] and _store_ids(index) == crashed
    assert raw_source(index).status == "indexing"  # listed as queued; the row is left as it was

    (outcome,) = index.recover()
    assert (outcome.status, outcome.source_id, reingests) == ("indexed", source_id, [source_id])
    (source,) = index.list_sources()
    assert (source["status"], source["reason"], source["attempts"]) == ("indexed", None, 2)
    rows, vectors, terms = _store_ids(index)
    assert rows == vectors == terms and len(rows) == source["chunks"]
    assert index.check().clean
    (hit, *_) = index.get_retriever_pipelines({})[0]("Zorblax reactor temperature", top_k=3)
    assert hit.chunk.source_id == source_id and "451 kelvin" in hit.chunk.text
    assert index.recover() == []


def test_a_file_that_crashes_its_retry_too_is_failed_and_never_tried_again(
    settings: AppSettings, upload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = start_index(settings)
    _crash_before_the_flip(index, upload, monkeypatch)
    # The retry crashes too: the count was committed before it read anything.
    with monkeypatch.context() as patch:
        patch.setattr(FileIndexingPipeline, "_run_ingest", _raiser("_run_ingest"))
        with pytest.raises(Crash):
            start_index(settings).recover()
    index = start_index(settings)
    assert raw_source(index).attempts == MAX_INDEXING_ATTEMPTS
    (listed,) = index.list_sources()
    assert listed["status"] == "queued"
    assert listed["reason"].startswith("interrupted 2 times; marked failed, not tried again")
    reingests = _count_reingests(monkeypatch)

    (outcome,) = index.recover()
    assert (outcome.status, outcome.reason, reingests) == ("failed", GAVE_UP_REASON, [])
    assert GAVE_UP_REASON == (
        "indexing stopped 2 times without finishing (the process was killed or crashed, "
        "perhaps out of memory); not tried again: remove the file or add it again"
    )
    (source,) = index.list_sources()
    assert (source["status"], source["reason"], source["chunks"]) == ("failed", GAVE_UP_REASON, 0)
    assert _store_ids(index) == (set(), set(), set())  # what it wrote is gone
    assert index.check().clean
    # Later starts and recoveries leave it alone.
    index = start_index(settings)
    assert index.recover() == [] and reingests == []
    assert index.check(repair=True).clean
    # Adding the file again starts afresh, with a count of its own.
    (outcome,) = index.get_indexing_pipeline({}).run([upload])
    assert outcome.status == "indexed"
    ((status, attempts),) = [(s["status"], s["attempts"]) for s in index.list_sources()]
    assert (status, attempts) == ("indexed", 1)


def test_the_attempt_is_counted_before_the_file_is_read(
    settings: AppSettings, upload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = start_index(settings)
    # The first step after the row is written is the stored copy, then the reading.
    monkeypatch.setattr(FileIndexingPipeline, "_keep_copy", _raiser("_keep_copy"))
    with pytest.raises(Crash):
        index.get_indexing_pipeline({}).run([upload])
    assert (raw_source(index).status, raw_source(index).attempts) == ("indexing", 1)
    monkeypatch.undo()
    index.get_indexing_pipeline({})._keep_copy(upload, Path(raw_source(index).stored_path), "x")
    # A retry reads the stored copy in _run_ingest: counted before it.
    monkeypatch.setattr(FileIndexingPipeline, "_run_ingest", _raiser("_run_ingest"))
    with pytest.raises(Crash):
        index.recover()
    assert (raw_source(index).status, raw_source(index).attempts) == ("indexing", 2)


def test_check_repair_honours_the_attempt_count(
    settings: AppSettings, upload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = start_index(settings)
    source_id = _crash_before_the_flip(index, upload, monkeypatch)
    with Session(index.resources.engine) as session:
        row = session.get(Source, source_id)
        assert row is not None
        row.attempts = MAX_INDEXING_ATTEMPTS
        session.add(row)
        session.commit()
    (problem,) = index.check().problems
    assert (problem.kind, problem.ids) == ("interrupted", [source_id])
    assert problem.message == (
        "1 files were left unfinished by a process that stopped: 'reactor.md'; "
        "'reactor.md' stopped 2 times and will be failed, not indexed again"
    )
    reingests = _count_reingests(monkeypatch)
    report = index.check(repair=True)
    assert report.ok and reingests == []
    (source,) = index.list_sources()
    assert (source["status"], source["reason"]) == ("failed", GAVE_UP_REASON)
    assert _store_ids(index) == (set(), set(), set()) and index.check().clean


def test_indexing_an_indexed_file_again_counts_afresh(settings: AppSettings, upload: Path) -> None:
    index = start_index(settings)
    index.get_indexing_pipeline({}).run([upload])
    source_id = raw_source(index).id
    pipeline = index.get_indexing_pipeline({})
    for _ in range(3):  # as `check --repair` does for a file that lost chunk rows
        with WorkLock(pipeline.locks_dir, source_id):
            assert pipeline.reingest(source_id).status == "indexed"
    assert (raw_source(index).status, raw_source(index).attempts) == ("indexed", 1)


def test_without_its_stored_copy_the_file_is_failed_with_the_reason(
    settings: AppSettings, upload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = start_index(settings)
    _crash_before_the_flip(index, upload, monkeypatch)
    for stored in (index.resources.data_dir / "files").iterdir():
        stored.unlink()

    index = start_index(settings)
    (outcome,) = index.recover()
    assert (outcome.status, outcome.reason) == ("failed", INTERRUPTED_REASON)
    (source,) = index.list_sources()
    assert (source["status"], source["reason"]) == ("failed", INTERRUPTED_REASON)
    assert _store_ids(index) == (set(), set(), set())
    assert index.check().clean
    assert index.get_retriever_pipelines({})[0]("Zorblax reactor", top_k=3) == []
    # Adding the file again works: the failed row gives way to a new one.
    (outcome,) = index.get_indexing_pipeline({}).run([upload])
    assert outcome.status == "indexed"
    assert [s["status"] for s in index.list_sources()] == ["indexed"]


def test_a_removal_cut_short_waits_for_the_recovery_or_a_new_removal(
    settings: AppSettings, upload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = start_index(settings)
    index.get_indexing_pipeline({}).run([upload])
    for finish in ("recover", "remove again"):
        pipeline = index.get_indexing_pipeline({})
        (source,) = index.list_sources()
        with monkeypatch.context() as patch:
            patch.setattr(pipeline, "_remove_from_stores", _raiser("_remove_from_stores"))
            with pytest.raises(Crash):
                pipeline.remove(str(source["id"]))
        index = start_index(settings)
        (left,) = index.list_sources()
        assert left["status"] == "removing"
        assert left["reason"].startswith("removal interrupted; finished when `ragloom serve`")
        if finish == "recover":
            index.recover()
        else:
            assert index.remove_source("reactor.md")
        assert index.list_sources() == []
        assert _store_ids(index) == (set(), set(), set())
        assert list((index.resources.data_dir / "files").iterdir()) == []
        assert index.check().clean
        index.get_indexing_pipeline({}).run([upload])


def test_an_interrupted_file_can_be_removed_without_indexing_it(
    settings: AppSettings, upload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = start_index(settings)
    _crash_before_the_flip(index, upload, monkeypatch)
    reingests = _count_reingests(monkeypatch)
    index = start_index(settings)
    assert index.remove_source("reactor.md") and reingests == []
    assert index.list_sources() == [] and _store_ids(index) == (set(), set(), set())
    assert index.check().clean


def test_a_file_a_live_process_is_indexing_is_left_alone(
    settings: AppSettings, upload: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = start_index(settings)
    source_id = _crash_before_the_flip(index, upload, monkeypatch)
    # Held as the process indexing it would hold it (flock: separate opens exclude).
    worker = WorkLock(index.locks_dir, source_id)
    assert worker.acquire(blocking=False)
    try:
        index = start_index(settings)
        assert index.recover() == []
        (listed,) = index.list_sources()
        assert (listed["status"], listed["reason"]) == ("indexing", None)
        report = index.check(repair=True)
        assert report.clean, report.problems  # its chunks in the stores are not "extra"
        assert report.notes == ["1 files are being worked on now: 'reactor.md'"]
        assert len(index.vector_store.ids()) >= 1
        # The same content uploaded meanwhile is not indexed twice: past its wait for
        # that process's copy (test_busy_copies.py), it fails, saying why.
        pipeline = index.get_indexing_pipeline({})
        pipeline.busy_wait_seconds = 0.1
        (outcome,) = pipeline.run([upload])
        assert outcome.status == "failed" and "still being indexed" in (outcome.reason or "")
    finally:
        worker.release()
    (problem,) = index.check().problems
    assert (problem.kind, problem.ids) == ("interrupted", [source_id])
    assert problem.message == (
        "1 files were left unfinished by a process that stopped: 'reactor.md'"
    )
    assert index.check(repair=True).ok
    assert [s["status"] for s in index.list_sources()] == ["indexed"]
    assert index.check().clean


def test_an_index_whose_recovery_fails_does_not_stop_the_others(
    settings: AppSettings,
    upload: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = start_app(settings)
    (first,) = app.indices.indices
    assert isinstance(first, FileIndex)
    _crash_before_the_flip(first, upload, monkeypatch)
    second = app.indices.create("Second", "ragloom_app.index.file.FileIndex")
    assert isinstance(second, FileIndex)
    _crash_before_the_flip(second, upload, monkeypatch)
    app = start_app(settings)
    broken, working = app.indices.indices
    monkeypatch.setattr(broken, "recover", _raiser_exception)
    with caplog.at_level(logging.INFO):
        (outcome,) = app.recover_indices()
    assert (outcome.status, outcome.name) == ("indexed", "reactor.md")
    assert "recovery of index 'My files' failed" in caplog.text
    assert "recovery: reactor.md indexed" in caplog.text
    assert [s["status"] for s in working.list_sources()] == ["indexed"]


def _raiser_exception() -> None:
    raise RuntimeError("the store is gone")


def test_leftovers_of_dead_processes_are_removed_and_live_ones_kept(settings: AppSettings) -> None:
    index = start_index(settings)
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
    dead_lock = locks / "content-dead.lock"  # its holder was killed: the file stays
    dead_lock.parent.mkdir()
    dead_lock.touch()
    with (
        WorkLock(locks, "cafe"),
        WorkLock(locks, "archive-live"),
        WorkLock(locks, "content-live") as live_lock,
    ):
        index = start_index(settings)
        assert not dead_partial.exists() and not dead_archive.exists()
        assert not dead_lock.exists()
        assert live_partial.exists() and live_archive.exists() and live_lock.path.exists()
    assert not list(locks.iterdir())


def test_an_index_with_nothing_to_recover_starts_without_touching_its_stores(
    settings: AppSettings, upload: Path
) -> None:
    index = start_index(settings)
    index.get_indexing_pipeline({}).run([upload])
    before = _store_ids(index)
    index = start_index(settings)
    assert index.recover() == []
    assert _store_ids(index) == before
    with Session(index.resources.engine) as session:
        assert [(s.status, s.attempts) for s in session.exec(select(Source))] == [("indexed", 1)]
