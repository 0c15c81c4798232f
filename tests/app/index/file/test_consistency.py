"""``FileIndex.check``: each store corrupted on purpose is reported, and repaired."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlmodel import Session, delete, select

from ragloom.schema import Chunk
from ragloom_app.app import BaseApp
from ragloom_app.db.models import ChunkRecord, Source
from ragloom_app.index.base import BaseIndex, IndexResources
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.consistency import STORED_COPY_MISSING_REASON
from ragloom_app.settings import AppSettings
from tests.helpers.file_index import EMBEDDED, StoreSetup

REACTOR = (
    "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin. It was built in Lund in 2019 by a "
    "crew of forty welders.\n\nIts cooling loop is flushed every ninety days by the night "
    "shift, who log the pressure of each valve.\n\nThe turbine hall holds two generators "
    "and a spare rotor kept in oil.\n"
)
PUMPS = (
    "# Pumps\n\nThe harbour pumps move seawater uphill at night when power is cheap.\n\n"
    "Each pump has a bronze impeller replaced every winter by the harbour crew.\n\nThe "
    "oldest pump dates from 1931 and still runs on Sundays for the visitors who come by "
    "ferry.\n"
)


def _settings(data_dir: Path, stores: StoreSetup) -> AppSettings:
    # Small chunks: several per file, so one can go missing while the others stay.
    config = {"chunk_size": 32, "chunk_overlap": 0}
    return stores.app_settings(
        data_dir,
        indices=[
            {"name": "My files", "type": "ragloom_app.index.file.FileIndex", "config": config}
        ],
    )


@pytest.fixture
def index(tmp_path: Path, stores: StoreSetup) -> FileIndex:
    app = BaseApp(_settings(tmp_path / "data", stores)).start()
    (index,) = app.indices.indices
    assert isinstance(index, FileIndex)
    (tmp_path / "reactor.md").write_text(REACTOR)
    (tmp_path / "pumps.md").write_text(PUMPS)
    outcomes = index.get_indexing_pipeline({}).run([tmp_path / "reactor.md", tmp_path / "pumps.md"])
    assert [o.status for o in outcomes] == ["indexed", "indexed"]
    assert all(o.chunks >= 2 for o in outcomes)
    return index


def _db_chunks(index: FileIndex) -> dict[str, str]:
    with Session(index.resources.engine) as session:
        rows = session.exec(select(ChunkRecord).where(ChunkRecord.index_id == index.id))
        return {r.id: r.text for r in rows}


def _assert_consistent(index: FileIndex) -> None:
    db = set(_db_chunks(index))
    assert db == index.vector_store.ids() == index.fulltext_store.ids()
    report = index.check()
    assert report.clean and report.ok, report.problems


def _kinds(index: FileIndex) -> set[tuple[str, str | None]]:
    return {(p.kind, p.store) for p in index.check().problems}


def test_a_fresh_index_is_clean_and_repair_changes_nothing(index: FileIndex) -> None:
    report = index.check()
    assert report.clean and report.ok and report.problems == []
    chunks = len(_db_chunks(index))
    assert report.counts == {
        "sources": 2,
        "indexed": 2,
        "chunks": chunks,
        "vector": chunks,
        "fulltext": chunks,
    }
    before = _db_chunks(index)
    assert index.check(repair=True).clean
    assert _db_chunks(index) == before
    _assert_consistent(index)


def _first_chunk_of(index: FileIndex, name: str) -> tuple[str, str]:
    with Session(index.resources.engine) as session:
        row = session.exec(
            select(ChunkRecord)
            .join(Source, Source.id == ChunkRecord.source_id)
            .where(Source.name == name)
            .order_by(ChunkRecord.id)
        ).first()
    assert row is not None
    return row.id, row.text


def _lose_a_vector(index: FileIndex) -> str:
    chunk_id, _ = _first_chunk_of(index, "reactor.md")
    index.vector_store.delete([chunk_id])
    return chunk_id


def _add_a_stray_term_chunk(index: FileIndex) -> str:
    stray = Chunk("ghost-00000", "The Zorblax ghost haunts the turbine hall.", "ghost", "ghost.md")
    index.fulltext_store.add([stray])
    return stray.id


def _lose_a_chunk_row(index: FileIndex) -> str:
    chunk_id, _ = _first_chunk_of(index, "pumps.md")
    with Session(index.resources.engine) as session:
        session.exec(delete(ChunkRecord).where(ChunkRecord.id == chunk_id))
        session.commit()
    return chunk_id


@pytest.mark.parametrize(
    ("corrupt", "expected"),
    [
        (_lose_a_vector, {("missing_chunks", "vector")}),
        (_add_a_stray_term_chunk, {("extra_chunks", "fulltext")}),
        (
            _lose_a_chunk_row,
            # The row is gone but both stores still hold the chunk, and the file lacks it.
            {("incomplete_source", None), ("extra_chunks", "vector"), ("extra_chunks", "fulltext")},
        ),
    ],
    ids=["chroma-lost-a-chunk", "stray-chunk-in-bm25", "chunk-row-deleted"],
)
def test_check_reports_the_corruption_and_repair_fixes_it(
    index: FileIndex,
    corrupt: Callable[[FileIndex], str],
    expected: set[tuple[str, str | None]],
) -> None:
    before = _db_chunks(index)
    chunk_id = corrupt(index)
    report = index.check()
    assert {(p.kind, p.store) for p in report.problems} == expected
    assert not report.ok and not any(p.repaired for p in report.problems)
    store_problems = [p for p in report.problems if p.store is not None]
    assert all(p.ids == [chunk_id] for p in store_problems)

    repaired = index.check(repair=True)
    assert {(p.kind, p.store) for p in repaired.problems} == expected
    assert repaired.ok and all(p.repaired for p in repaired.problems)
    _assert_consistent(index)
    # Repair restores what the database recorded: same chunk ids, same texts.
    assert _db_chunks(index) == before
    assert "ghost" not in {s["name"] for s in index.list_sources()}


def test_a_chunk_chroma_lost_is_found_by_vectors_again_after_repair(index: FileIndex) -> None:
    chunk_id, text = _first_chunk_of(index, "reactor.md")
    index.vector_store.delete([chunk_id])
    embedding = index.resources.embeddings().embed_query(text)
    assert chunk_id not in {c.id for c, _ in index.vector_store.query(embedding, 3)}
    index.check(repair=True)
    best, score = index.vector_store.query(embedding, 1)[0]
    assert best.id == chunk_id and best.source_name == "reactor.md" and score > 0.99


def test_a_lost_stored_copy_fails_the_file_on_repair(index: FileIndex) -> None:
    with Session(index.resources.engine) as session:
        source = session.exec(select(Source).where(Source.name == "pumps.md")).one()
    assert source.stored_path is not None
    Path(source.stored_path).unlink()
    (problem,) = index.check().problems
    assert (problem.kind, problem.ids) == ("stored_file_missing", [source.id])
    assert "'pumps.md'" in problem.message
    assert index.check(repair=True).ok
    by_name = {s["name"]: s for s in index.list_sources()}
    assert by_name["pumps.md"]["status"] == "failed"
    assert by_name["pumps.md"]["reason"] == STORED_COPY_MISSING_REASON
    assert by_name["reactor.md"]["status"] == "indexed"
    _assert_consistent(index)
    assert not any(cid.startswith(source.id) for cid in index.vector_store.ids())


def test_a_stored_file_of_no_source_is_removed_on_repair(index: FileIndex) -> None:
    stray = index.resources.data_dir / "files" / ("0" * 64 + ".md")
    stray.write_text("left behind")
    (problem,) = index.check().problems
    assert (problem.kind, problem.ids) == ("unreferenced_files", [stray.name])
    assert index.check(repair=True).ok
    assert not stray.exists()
    _assert_consistent(index)


def test_several_problems_at_once_are_all_repaired(index: FileIndex) -> None:
    lost_vector = _lose_a_vector(index)
    stray = _add_a_stray_term_chunk(index)
    lost_row = _lose_a_chunk_row(index)
    found = {(p.kind, p.store): p.ids for p in index.check().problems}
    assert found == {
        ("missing_chunks", "vector"): [lost_vector],
        ("extra_chunks", "vector"): [lost_row],
        ("extra_chunks", "fulltext"): sorted([lost_row, stray]),
        ("incomplete_source", None): [found[("incomplete_source", None)][0]],
    }
    report = index.check(repair=True)
    assert report.ok and len(report.problems) == 4
    assert report.counts["chunks"] == report.counts["vector"] == report.counts["fulltext"]
    _assert_consistent(index)


def test_report_to_dict_is_the_json_shape(index: FileIndex) -> None:
    chunk_id = _lose_a_vector(index)
    data = index.check().to_dict()
    assert data["index"] == "My files" and data["ok"] is False and data["clean"] is False
    (problem,) = data["problems"]
    assert problem == {
        "kind": "missing_chunks",
        "message": "1 chunks of indexed files are missing from Chroma",
        "store": "vector",
        "ids": [chunk_id],
        "repaired": False,
    }


def test_an_index_type_without_stores_to_compare_reports_clean(tmp_path: Path) -> None:
    app = BaseApp(_settings(tmp_path / "data", EMBEDDED)).start()
    resources = IndexResources(app.engine, tmp_path, tmp_path, app.embeddings)
    report = BaseIndex(7, "Web links", {}, resources).check(repair=True)
    assert report.clean and report.ok
    assert report.to_dict() == {
        "index": "Web links",
        "ok": True,
        "clean": True,
        "counts": {},
        "problems": [],
        "notes": ["BaseIndex has nothing to check"],
    }


def test_a_copy_stored_through_another_data_folder_is_noted_not_repaired(
    index: FileIndex, tmp_path: Path
) -> None:
    """App processes that share the database but not the data folder each store the
    copies of what they index: a repair in one once took the others' files out of every
    store, as if their copies were lost."""
    with Session(index.resources.engine) as session:
        source = session.exec(select(Source).where(Source.name == "pumps.md")).one()
        assert source.stored_path is not None
        stored = Path(source.stored_path)
        elsewhere = tmp_path / "another-process" / "files"
        elsewhere.mkdir(parents=True)
        source.stored_path = str(stored.rename(elsewhere / stored.name))
        session.add(source)
        session.commit()
    report = index.check(repair=True)
    assert report.ok and report.problems == []
    assert report.notes == [
        "1 files were stored through another data folder, whose copies are not checked "
        "here: 'pumps.md'"
    ]
    assert {s["name"]: s["status"] for s in index.list_sources()}["pumps.md"] == "indexed"
    _assert_consistent(index)


def test_a_lost_copy_is_lost_however_the_data_folder_is_named(
    index: FileIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the default relative data folder the stored path is relative: named absolutely
    another time, the same folder once looked like another data folder's."""
    monkeypatch.chdir(tmp_path)
    with Session(index.resources.engine) as session:
        source = session.exec(select(Source).where(Source.name == "pumps.md")).one()
        assert source.stored_path is not None
        stored = Path(source.stored_path)
        stored.unlink()
        source.stored_path = str(stored.relative_to(tmp_path))
        session.add(source)
        session.commit()
        source_id = source.id
    (problem,) = index.check().problems
    assert (problem.kind, problem.ids) == ("stored_file_missing", [source_id])
