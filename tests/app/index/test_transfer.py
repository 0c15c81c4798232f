"""``ragloom index export`` and ``import``: an index moves from the embedded defaults
(SQLite, embedded Chroma, a BM25 file) to the server setup (PostgreSQL with its full text,
``chroma run``) and back, and answers the same questions with the same passages and
citations; a hostile or broken export is refused whole, leaving no index behind."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.recovery import clean_leftovers, recover_index
from ragloom_app.index.file.transfer import (
    IndexTransferError,
    export_index,
    import_index,
    importer,
)
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from tests.helpers.api_server import replay_app
from tests.helpers.chroma_server import ChromaServer
from tests.helpers.postgres import PostgresServer, fresh_database
from tests.helpers.transfer import (
    DOCUMENTS,
    FILE_INDEX,
    exported,
    file_index,
    identity,
    indexed,
    manifest_with,
    rewritten,
)

__all__ = ["exported"]

QUESTIONS = ["How hot is the reactor?", "What does the soup cost?", "When do badges expire?"]


def _what_it_finds(app: BaseApp, index: FileIndex) -> list[object]:
    found: list[object] = []
    for mode in ("fulltext", "vector", "hybrid"):
        (retriever,) = index.get_retriever_pipelines({"retrieval_mode": mode})
        for question in QUESTIONS:
            found.append(
                [
                    (h.chunk.source_name, h.chunk.text, h.chunk.start, h.chunk.end, h.chunk.page)
                    for h in retriever.run(question)
                ]
            )
    page = ChatPage(app)
    for question in QUESTIONS:
        *_, finished = page.ask(question, indices=[index.name])
        assert isinstance(finished, AnswerFinished)
        found.append(
            (
                finished.record.answer,
                [(c.source, c.text, c.page) for c in finished.record.citations],
            )
        )
    return found


def _import(app: BaseApp, path: Path, name: str | None = None) -> FileIndex:
    index, report = import_index(app.indices, path, identity(app), type_id=FILE_INDEX, name=name)
    assert report.sources == 3 and report.warnings == ()
    return index


@pytest.mark.postgres
def test_an_index_moves_to_the_servers_and_back_with_the_same_answers(
    tmp_path: Path, postgres_server: PostgresServer, chroma: ChromaServer
) -> None:
    laptop = replay_app(tmp_path / "laptop")
    original = indexed(laptop, tmp_path / "docs")
    expected = _what_it_finds(laptop, original)
    exported = tmp_path / "my-files.zip"
    report = export_index(original, exported, identity(laptop))
    assert (report.sources, report.chunks, report.skipped) == (3, 3, 0)

    server = replay_app(
        tmp_path / "server", database_url=fresh_database(postgres_server), chroma_server=chroma.url
    )
    moved = _import(server, exported, name="Moved files")
    assert moved.check().clean
    assert sorted(s["name"] for s in moved.list_sources()) == sorted(DOCUMENTS)
    assert moved.config == original.config
    assert _what_it_finds(server, moved) == expected

    back = tmp_path / "back.zip"
    export_index(moved, back, identity(server))
    returned = _import(laptop, back, name="Returned")
    assert returned.check().clean and _what_it_finds(laptop, returned) == expected
    # The stored copies came along: a file is indexed again from its own copy.
    (first, *_) = returned.list_sources()
    outcome = returned.reindex_source(str(first["id"]))
    assert outcome is not None and outcome.status == "indexed"


def test_a_file_underway_in_an_import_is_left_alone_by_other_processes_and_users(
    exported: tuple[BaseApp, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another ``ragloom`` command starting (it deletes partial copies no process holds)
    or ``index check --repair`` (it indexes again files left ``indexing``) while a file is
    imported: its copy and its row are held, as an upload's are. Other users see the
    index (shared, as asked) once it is whole."""
    app, good = exported
    seen: list[str] = []
    copy_checked = importer._copy_checked

    def copy_with_others_starting(
        archive: zipfile.ZipFile, member: str, target: Path, partial: Path
    ) -> None:
        pipeline = app.indices.get("Imported").get_indexing_pipeline({})
        # Half imported: its owner's alone until it is whole.
        assert [i.name for i in app.indices.readable_by("someone-else")] == ["My files"]
        target.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(b"half a file")  # as far as the copy has gone
        clean_leftovers(pipeline)
        seen.extend(o.status for o in recover_index(pipeline))
        assert partial.read_bytes() == b"half a file"
        copy_checked(archive, member, target, partial)

    monkeypatch.setattr(importer, "_copy_checked", copy_with_others_starting)
    index, report = import_index(
        app.indices, good, identity(app), type_id=FILE_INDEX, name="Imported"
    )
    assert report.sources == 3 and seen == []  # nothing taken over
    assert [i.name for i in app.indices.readable_by("someone-else")] == ["My files", "Imported"]
    assert index.check().clean and {s["status"] for s in index.list_sources()} == {"indexed"}


def test_an_export_is_written_only_into_a_folder_that_exists(
    exported: tuple[BaseApp, Path], tmp_path: Path
) -> None:
    app, _ = exported
    index = file_index(app)
    with pytest.raises(IndexTransferError, match="no folder"):
        export_index(index, tmp_path / "missing" / "x.zip", identity(app))
    with pytest.raises(IndexTransferError, match="is a folder"):
        export_index(index, tmp_path, identity(app))


def test_an_export_leaves_out_a_file_removed_while_it_is_written(
    exported: tuple[BaseApp, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, _ = exported
    index = file_index(app)
    first, *_ = index.list_sources()
    vectors = index.vector_store.vectors

    def removed_meanwhile(ids: list[str]) -> dict[str, object]:
        if any(i.startswith(str(first["id"])) for i in ids):
            index.get_indexing_pipeline({}).remove(str(first["id"]))
        return vectors(ids)

    monkeypatch.setattr(index.vector_store, "vectors", removed_meanwhile)
    report = export_index(index, tmp_path / "during.zip", identity(app))
    assert (report.sources, report.chunks) == (2, 2)
    monkeypatch.undo()
    moved, _ = import_index(
        app.indices, tmp_path / "during.zip", identity(app), type_id=FILE_INDEX, name="Moved"
    )
    assert sorted(s["name"] for s in moved.list_sources()) == sorted(
        s["name"] for s in index.list_sources()
    )
    assert moved.check().clean


def test_an_export_holding_one_content_twice_imports_it_once_and_says_so(
    exported: tuple[BaseApp, Path], tmp_path: Path
) -> None:
    """An index from before one source per content was kept: the later copy replaces the
    earlier, and the report counts the files the index holds."""
    app, good = exported
    with zipfile.ZipFile(good) as archive:
        sources = archive.read("sources.jsonl").splitlines(keepends=True)
        chunks = archive.read("chunks.jsonl").splitlines(keepends=True)
        vectors = archive.read("vectors.f32")
    assert json.loads(sources[0])["chunks"] == 1  # one chunk each: the lines pair up
    width = len(vectors) // len(chunks)
    twice = rewritten(
        good,
        tmp_path / "twice.zip",
        {
            "sources.jsonl": b"".join([sources[0], *sources]),
            "chunks.jsonl": b"".join([chunks[0], *chunks]),
            "vectors.f32": vectors[:width] + vectors,
            "manifest.json": manifest_with(good, sources=len(sources) + 1, chunks=len(chunks) + 1),
        },
    )
    index, report = import_index(
        app.indices, twice, identity(app), type_id=FILE_INDEX, name="Imported"
    )
    assert report.sources == len(sources) == len(index.list_sources())
    assert index.check().clean
