"""The file index: what each file becomes, and stores that always agree."""

import codecs
import errno
from dataclasses import replace
from pathlib import Path

import pytest
from sqlmodel import Session, select

from ragloom_app.app import BaseApp
from ragloom_app.db.models import ChunkRecord, Source
from ragloom_app.index.file import FileIndex
from tests.helpers.file_index import StoreSetup
from tests.helpers.pdfs import make_pdf

REACTOR = "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin.\n\nIt was built in Lund in 2019.\n"


@pytest.fixture
def index(tmp_path: Path, stores: StoreSetup) -> FileIndex:
    settings = stores.app_settings(tmp_path / "data")
    app = BaseApp(settings).start()
    (index,) = app.indices.indices
    assert isinstance(index, FileIndex)
    return index


def _chunk_ids(index: FileIndex) -> tuple[set[str], set[str], set[str]]:
    with Session(index.resources.engine) as session:
        db = {
            c.id for c in session.exec(select(ChunkRecord).where(ChunkRecord.index_id == index.id))
        }
    return db, index.vector_store.ids(), index.fulltext_store.ids()


def test_one_upload_of_good_and_bad_files(index: FileIndex, tmp_path: Path) -> None:
    files = {
        "reactor.md": REACTOR.encode(),
        "manual.pdf": make_pdf(["Page one: the pump.", "Page two: the valve."]),
        "empty.txt": b"",
        "blank.pdf": b"",
        "corrupt.pdf": b"%PDF-1.4\n" + bytes(range(200)),
        "photo.txt": bytes(range(256)) * 4,
        "data.xyz": b"1,2,3",
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    outcomes = {
        o.name: o for o in index.get_indexing_pipeline({}).run([tmp_path / n for n in files])
    }
    assert outcomes["reactor.md"].status == "indexed"
    assert outcomes["manual.pdf"].status == "indexed" and outcomes["manual.pdf"].chunks == 2
    failed = {name: o.reason for name, o in outcomes.items() if o.status == "failed"}
    assert set(failed) == {"empty.txt", "blank.pdf", "corrupt.pdf", "photo.txt", "data.xyz"}
    assert "empty" in failed["empty.txt"]
    assert "empty" in failed["blank.pdf"]
    assert "not a valid PDF" in failed["corrupt.pdf"]
    assert "binary" in failed["photo.txt"]
    assert failed["data.xyz"].startswith("unsupported file type '.xyz'")
    db, vectors, terms = _chunk_ids(index)
    assert db == vectors == terms and len(db) == 3
    pages = {r.chunk.page for r in index.get_retriever_pipelines({})[0]("valve", top_k=5)}
    assert 2 in pages


def test_same_content_is_skipped_unless_reindexed(index: FileIndex, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(REACTOR)
    (tmp_path / "copy.md").write_text(REACTOR)
    pipeline = index.get_indexing_pipeline({})
    first, again = pipeline.run([tmp_path / "a.md", tmp_path / "copy.md"])
    assert first.status == "indexed"
    assert again.status == "skipped" and "already indexed as 'a.md'" in again.reason
    (redone,) = pipeline.run([tmp_path / "a.md"], reindex=True)
    assert redone.status == "indexed"
    db, vectors, terms = _chunk_ids(index)
    assert db == vectors == terms and len(db) == first.chunks


def test_a_nul_in_a_file_is_stored_alike_in_every_store(index: FileIndex, tmp_path: Path) -> None:
    # PostgreSQL's text cannot hold U+0000: the chunk rows refused it, so the file failed
    # there, while Chroma kept it and the full-text store had U+FFFD in its place.
    (tmp_path / "a.json").write_text('{"title":"hello\\u0000world"}')
    (tmp_path / "b.txt").write_bytes(
        codecs.BOM_UTF16_LE + "A note on the pump.\x00 It hums.".encode("utf-16-le")
    )
    outcomes = index.get_indexing_pipeline({}).run([tmp_path / "a.json", tmp_path / "b.txt"])
    assert [o.status for o in outcomes] == ["indexed", "indexed"], [o.reason for o in outcomes]
    with Session(index.resources.engine) as session:
        rows = {c.id: c.text for c in session.exec(select(ChunkRecord))}
    assert sorted(rows.values()) == [
        "A note on the pump.\ufffd It hums.",
        "title: hello\ufffdworld",
    ]
    terms = {i: c.text for i, c in index.fulltext_store.chunks(sorted(rows)).items()}
    assert rows == terms and index.vector_store.ids() == set(rows)
    assert index.check().clean


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("x\x00y.md", "NUL"),
        ("a" * 300 + ".md", "303 characters long; the limit is 255"),
        ("bad\x07name.md", "control characters"),
    ],
)
def test_unsafe_names_are_refused(index: FileIndex, tmp_path: Path, name: str, reason: str) -> None:
    (tmp_path / "f.md").write_text(REACTOR)
    (outcome,) = index.get_indexing_pipeline({}).run([tmp_path / "f.md"], names=[name])
    assert outcome.status == "failed" and reason in outcome.reason


def test_folders_in_a_name_are_dropped(index: FileIndex, tmp_path: Path) -> None:
    (tmp_path / "f.md").write_text(REACTOR)
    (outcome,) = index.get_indexing_pipeline({}).run([tmp_path / "f.md"], names=["../../etc/f.md"])
    assert (outcome.status, outcome.name) == ("indexed", "f.md")
    stored = list((index.resources.data_dir / "files").iterdir())
    assert [p.suffix for p in stored] == [".md"]
    assert not (tmp_path.parent / "etc").exists()


def test_file_over_the_size_limit(index: FileIndex, tmp_path: Path) -> None:
    """Both sizes in units that show them: a limit of 100 kB once read "the limit is 0 MB"."""
    index.resources = replace(index.resources, max_file_bytes=100_000)
    (tmp_path / "big.md").write_text("word " * 30_000)
    (outcome,) = index.get_indexing_pipeline({}).run([tmp_path / "big.md"])
    assert (outcome.status, outcome.reason) == (
        "failed",
        "file too large: 146.5 KB, the limit is 97.7 KB",
    )


def test_a_store_failure_leaves_no_chunk_anywhere(
    index: FileIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.md").write_text(REACTOR)

    def disk_full(chunks: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "/srv/ragloom/bm25/part-7")

    pipeline = index.get_indexing_pipeline({})
    monkeypatch.setattr(pipeline.ingestor.fulltext_store, "add", disk_full)
    (outcome,) = pipeline.run([tmp_path / "a.md"])
    assert outcome.status == "failed" and "No space left on device" in outcome.reason
    assert "/srv" not in outcome.reason and "log reference" in outcome.reason
    assert _chunk_ids(index) == (set(), set(), set())
    with Session(index.resources.engine) as session:
        (source,) = session.exec(select(Source)).all()
    assert source.status == "failed"


def test_remove_takes_a_file_out_of_every_store(index: FileIndex, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(REACTOR)
    index.get_indexing_pipeline({}).run([tmp_path / "a.md"])
    assert index.remove_source("a.md")
    assert _chunk_ids(index) == (set(), set(), set())
    assert index.list_sources() == []
    assert not index.remove_source("a.md")
