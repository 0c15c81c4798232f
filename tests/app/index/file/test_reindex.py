"""A file indexed again replaces its old version only once the new one is indexed.

Each test indexes a real file into a real index (database, Chroma, BM25) with hash
embeddings, indexes it again with ``reindex=True``, and stops, fails or crashes that
second indexing at one step, then looks at what the index holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragloom.embeddings import EmbeddingsError
from ragloom_app.index.base import FileOutcome, IndexingProgress
from ragloom_app.index.file import FileIndex
from tests.helpers.file_index import StoreSetup, hash_file_index

REACTOR = "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin.\n\nIt was built in Lund in 2019.\n"


class Crash(BaseException):
    """Stops the pipeline where a crash would: nothing in it catches a BaseException."""


@pytest.fixture
def index(tmp_path: Path, stores: StoreSetup) -> FileIndex:
    return hash_file_index(tmp_path / "data", setup=stores)


@pytest.fixture
def reactor(index: FileIndex, tmp_path: Path) -> tuple[Path, FileOutcome]:
    """``reactor.md``, indexed once: its path and its outcome."""
    path = tmp_path / "reactor.md"
    path.write_text(REACTOR, encoding="utf-8")
    (outcome,) = index.get_indexing_pipeline({}).run([path])
    assert outcome.status == "indexed"
    return path, outcome


def _sources(index: FileIndex) -> list[tuple[str, str]]:
    """Each source of the index: its id and status."""
    return sorted((str(s["id"]), str(s["status"])) for s in index.list_sources())


def _found(index: FileIndex) -> set[str]:
    """The source ids a search for the reactor's temperature finds."""
    results = index.get_retriever_pipelines({})[0]("Zorblax reactor kelvin", top_k=5)
    return {r.chunk.source_id for r in results}


def test_a_reindexed_file_replaces_its_old_version(
    index: FileIndex, reactor: tuple[Path, FileOutcome]
) -> None:
    path, first = reactor
    (again,) = index.get_indexing_pipeline({}).run([path], reindex=True)
    assert again.status == "indexed" and again.source_id != first.source_id
    assert _sources(index) == [(again.source_id, "indexed")]
    assert _found(index) == {again.source_id}
    assert index.vector_store.count() == again.chunks
    assert len(list(index.files_dir.iterdir())) == 1  # the copy both shared stays
    assert index.check().clean


def test_a_reindex_cancelled_before_its_file_is_reported_keeps_the_old_version(
    index: FileIndex, reactor: tuple[Path, FileOutcome]
) -> None:
    path, first = reactor
    events = index.get_indexing_pipeline({}).stream([path], reindex=True)
    next(events)  # the file is being read
    events.close()  # its owner cancels the job
    assert _sources(index) == [(first.source_id, "indexed")]
    assert _found(index) == {first.source_id}
    assert index.vector_store.count() == first.chunks
    assert len(list(index.files_dir.iterdir())) == 1
    assert index.check().clean


def test_a_reindex_cancelled_once_its_file_is_flipped_keeps_the_new_version(
    index: FileIndex, reactor: tuple[Path, FileOutcome]
) -> None:
    path, first = reactor
    events = index.get_indexing_pipeline({}).stream([path], reindex=True)
    for event in events:
        if isinstance(event, IndexingProgress) and event.message == "indexed":
            break  # flipped, its outcome not yet heard: the owner cancels now
    events.close()
    ((kept, status),) = _sources(index)
    assert kept != first.source_id and status == "indexed"
    assert _found(index) == {kept} and index.check().clean


def test_a_reindex_while_another_is_underway_is_skipped(
    index: FileIndex, reactor: tuple[Path, FileOutcome]
) -> None:
    path, first = reactor
    underway = index.get_indexing_pipeline({}).stream([path], reindex=True)
    events = [next(underway), next(underway)]  # read, and its group is embedding
    assert [e.message for e in events if isinstance(e, IndexingProgress)][-1].startswith(
        "embedding"
    )
    (second,) = index.get_indexing_pipeline({}).run([path], reindex=True)
    assert second.status == "skipped" and "being indexed right now" in (second.reason or "")
    assert second.source_id != first.source_id  # the new version, not the indexed one
    rest = [e for e in underway if isinstance(e, FileOutcome)]
    assert [(o.status, o.source_id) for o in rest] == [("indexed", second.source_id)]
    assert _sources(index) == [(second.source_id, "indexed")] and index.check().clean


def test_a_reindex_the_model_fails_keeps_the_old_version_searchable(
    index: FileIndex, reactor: tuple[Path, FileOutcome]
) -> None:
    path, first = reactor
    pipeline = index.get_indexing_pipeline({})

    def down(chunks: Any) -> np.ndarray:
        raise EmbeddingsError("connection refused")

    object.__setattr__(pipeline.ingestor, "embed", down)
    (failed,) = pipeline.run([path], reindex=True)
    assert failed.status == "failed" and "connection refused" in (failed.reason or "")
    # The failed attempt is listed beside the version it meant to replace, which stays.
    assert _sources(index) == sorted([(first.source_id, "indexed"), (failed.source_id, "failed")])
    assert _found(index) == {first.source_id}
    assert index.check().clean
    # A plain upload of the same content is still "already indexed"...
    (skipped,) = index.get_indexing_pipeline({}).run([path])
    assert skipped.status == "skipped" and skipped.source_id == first.source_id
    # ...and the next reindex that works replaces both.
    (again,) = index.get_indexing_pipeline({}).run([path], reindex=True)
    assert again.status == "indexed"
    assert _sources(index) == [(again.source_id, "indexed")]
    assert index.check().clean


def test_a_crash_before_the_new_version_is_flipped_leaves_the_old_one_until_the_recovery(
    index: FileIndex, reactor: tuple[Path, FileOutcome]
) -> None:
    path, first = reactor
    pipeline = index.get_indexing_pipeline({})

    def crashing_flip(source_id: str, chunks: Any) -> bool:
        raise Crash("killed")

    object.__setattr__(pipeline, "_flip", crashing_flip)
    with pytest.raises(Crash):
        pipeline.run([path], reindex=True)
    statuses = dict(_sources(index))
    assert statuses.pop(first.source_id) == "indexed"
    assert list(statuses.values()) == ["queued"]  # interrupted: listed as waiting its turn
    assert first.source_id in _found(index)
    # The recovery finishes the new version, which then replaces the old.
    (recovered,) = index.recover()
    assert recovered.status == "indexed"
    assert _sources(index) == [(recovered.source_id, "indexed")]
    assert _found(index) == {recovered.source_id} and index.check().clean


@pytest.mark.parametrize(
    "failure",
    [Crash("killed"), OSError("Chroma is down")],
    ids=["a crash", "a store failing"],
)
def test_the_old_version_a_removal_cut_short_leaves_is_removed_by_the_recovery(
    index: FileIndex, reactor: tuple[Path, FileOutcome], failure: BaseException
) -> None:
    path, first = reactor
    pipeline = index.get_indexing_pipeline({})

    def cut_short(source_id: str) -> None:
        raise failure

    object.__setattr__(pipeline, "remove", cut_short)
    if isinstance(failure, Crash):
        with pytest.raises(Crash):
            pipeline.run([path], reindex=True)
    else:  # the new version is indexed whatever happens to the old one
        (again,) = pipeline.run([path], reindex=True)
        assert again.status == "indexed"
    statuses = dict(_sources(index))
    assert statuses.pop(first.source_id) == "removing"  # marked in the flip's transaction
    ((new, status),) = statuses.items()
    assert status == "indexed" and new in _found(index)
    index.recover()
    assert _sources(index) == [(new, "indexed")] and index.check().clean
