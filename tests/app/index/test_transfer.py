"""``ragloom index export`` and ``import``: an index moves from the embedded defaults
(SQLite, embedded Chroma, a BM25 file) to the server setup (PostgreSQL with its full text,
``chroma run``) and back, and answers the same questions with the same passages and
citations; a hostile or broken export is refused whole, leaving no index behind."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.recovery import clean_leftovers, recover_index
from ragloom_app.index.file.transfer import (
    ImportLimits,
    IndexTransferError,
    embedding_identity,
    export_index,
    import_index,
    importer,
)
from ragloom_app.index.manager import IndexNameError
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from tests.helpers.api_server import replay_app
from tests.helpers.chroma_server import ChromaServer, chroma_server
from tests.helpers.postgres import PostgresServer, fresh_database

FILE_INDEX = "ragloom_app.index.file.FileIndex"
DOCUMENTS = {
    "reactor.md": "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin. It is cooled by "
    "liquid neon pumped at 12 litres a minute.",
    "canteen.md": "# Canteen\n\nThe canteen serves soup on Tuesdays. The soup of the day "
    "costs 4.50 credits.",
    "badge.txt": "Visitors wear a yellow badge; staff wear a blue one.\n\nBadges expire after "
    "90 days and are renewed at the front desk.",
}
_DEEP = b"[" * 100_000 + b"]" * 100_000  # deeper than Python's stack: a RecursionError
QUESTIONS = ["How hot is the reactor?", "What does the soup cost?", "When do badges expire?"]


@pytest.fixture(scope="module")
def chroma() -> Iterator[ChromaServer]:
    with chroma_server() as running:
        yield running


def _identity(app: BaseApp) -> dict[str, object]:
    spec = app.settings.embeddings[app.settings.default_embedding]
    return embedding_identity(spec, app.embeddings().dimension)


def _file_index(app: BaseApp, name: str = "My files") -> FileIndex:
    index = app.indices.get(name)
    assert isinstance(index, FileIndex)
    return index


def _indexed(app: BaseApp, folder: Path) -> FileIndex:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in DOCUMENTS.items():
        (folder / name).write_text(text, encoding="utf-8")
    index = _file_index(app)
    outcomes = index.get_indexing_pipeline({}).run([folder / n for n in DOCUMENTS])
    assert [o.status for o in outcomes] == ["indexed"] * 3
    return index


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
    index, report = import_index(app.indices, path, _identity(app), type_id=FILE_INDEX, name=name)
    assert report.sources == 3 and report.warnings == ()
    return index


@pytest.mark.postgres
def test_an_index_moves_to_the_servers_and_back_with_the_same_answers(
    tmp_path: Path, postgres_server: PostgresServer, chroma: ChromaServer
) -> None:
    laptop = replay_app(tmp_path / "laptop")
    original = _indexed(laptop, tmp_path / "docs")
    expected = _what_it_finds(laptop, original)
    exported = tmp_path / "my-files.zip"
    report = export_index(original, exported, _identity(laptop))
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
    export_index(moved, back, _identity(server))
    returned = _import(laptop, back, name="Returned")
    assert returned.check().clean and _what_it_finds(laptop, returned) == expected
    # The stored copies came along: a file is indexed again from its own copy.
    (first, *_) = returned.list_sources()
    outcome = returned.reindex_source(str(first["id"]))
    assert outcome is not None and outcome.status == "indexed"


@pytest.fixture
def exported(tmp_path: Path) -> tuple[BaseApp, Path]:
    app = replay_app(tmp_path / "app")
    export_index(_indexed(app, tmp_path / "docs"), tmp_path / "good.zip", _identity(app))
    return app, tmp_path / "good.zip"


def _rewritten(good: Path, target: Path, change: dict[str, bytes | None]) -> Path:
    """A copy of ``good`` with members replaced (or, for None, left out) or added."""
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(target, "w") as out:
        for info in source.infolist():
            if info.filename not in change:
                out.writestr(info.filename, source.read(info.filename))
        for name, data in change.items():
            if data is not None:
                out.writestr(name, data)
    return target


def _manifest(good: Path, **values: object) -> bytes:
    with zipfile.ZipFile(good) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    manifest.update(values)
    return json.dumps(manifest).encode()


def _member(good: Path, prefix: str) -> str:
    with zipfile.ZipFile(good) as archive:
        return next(n for n in archive.namelist() if n.startswith(prefix))


def _other_content(good: Path) -> dict[str, bytes | None]:
    """The first stored copy with other bytes of its size (its record's size holds)."""
    member = _member(good, "files/")
    with zipfile.ZipFile(good) as archive:
        return {member: archive.read(member)[::-1]}


def _extra_chunk_line(good: Path) -> dict[str, bytes | None]:
    with zipfile.ZipFile(good) as archive:
        lines = archive.read("chunks.jsonl")
    return {"chunks.jsonl": lines + lines.splitlines(keepends=True)[0]}


def _first_line(good: Path, member: str, **values: object) -> dict[str, bytes | None]:
    """``member`` (a ``.jsonl``) with its first record's ``values`` changed; a value of
    :class:`bytes` is written into the JSON as it is (``1e400``: not a number JSON dumps)."""
    with zipfile.ZipFile(good) as archive:
        first, *rest = archive.read(member).decode().splitlines()
    record = json.loads(first)
    raw = {key: value for key, value in values.items() if isinstance(value, bytes)}
    record.update({key: value for key, value in values.items() if key not in raw})
    line = json.dumps({**record, **{key: f"@{key}@" for key in raw}})
    for key, value in raw.items():
        line = line.replace(f'"@{key}@"', value.decode())
    return {member: "\n".join([line, *rest, ""]).encode()}


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (lambda good: {"../../etc/passwd": b"x"}, "not an index export"),
        (lambda good: {"chunks.jsonl": None}, "not an index export"),
        (lambda good: {"manifest.json": _manifest(good, format=99)}, "manifest is not usable"),
        (lambda good: {"manifest.json": _manifest(good, chunks=-1)}, "manifest is not usable"),
        (lambda good: {"vectors.f32": b"\0" * 12}, "vectors do not match"),
        (lambda good: _other_content(good), "does not match its sha256"),
        (lambda good: {_member(good, "files/"): None}, "holds no stored copy of 'reactor.md'"),
        (lambda good: {"chunks.jsonl": b"[1, 2]\n"}, "not an object"),
        (lambda good: {"manifest.json": _DEEP}, "manifest is not usable: maximum recursion"),
        (lambda good: {"chunks.jsonl": _DEEP + b"\n"}, "not JSON: maximum recursion"),
        (lambda good: {"sources.jsonl": b'{"name": "x"}\n'}, "bad record"),
        (
            lambda good: _first_line(good, "sources.jsonl", name="invoice\u202efdp.exe"),
            "bad record .*changes how it is displayed",
        ),
        (lambda good: _first_line(good, "sources.jsonl", name="a\x00b.md"), "NUL"),
        (lambda good: _first_line(good, "sources.jsonl", name="a/../b.md"), "bad record"),
        (
            lambda good: _first_line(good, "sources.jsonl", suffix=".html"),
            r"stored copy of '.*\.md' is of another type \(\.html\)",
        ),
        (
            lambda good: _first_line(good, "sources.jsonl", chunks=10**8),
            "more chunks than the manifest leaves",
        ),
        (lambda good: _first_line(good, "sources.jsonl", size=b"1e400"), "bad record"),
        (lambda good: _first_line(good, "sources.jsonl", size=None), "bad record"),
        (
            lambda good: _first_line(good, "sources.jsonl", size=2**31),
            r"'reactor.md' is recorded as 2147483648 bytes, its stored copy has \d+",
        ),
        (lambda good: _first_line(good, "chunks.jsonl", start=2**40), "bad chunk"),
        (lambda good: _first_line(good, "chunks.jsonl", page=b"1e400"), "bad chunk"),
        (lambda good: _first_line(good, "chunks.jsonl", text=7), "bad chunk"),
        (lambda good: {"files/" + "0" * 64 + ".md": b"stowaway"}, "which no file names"),
        (lambda good: _extra_chunk_line(good), "more chunks than its files have"),
    ],
    ids=[
        "path-member",
        "missing-member",
        "format",
        "negative-count",
        "vectors-size",
        "file-hash",
        "file-missing",
        "chunk-not-object",
        "manifest-nested-deep",
        "chunk-nested-deep",
        "source-record",
        "name-reordered",
        "name-nul",
        "name-dot-dot",
        "stored-type",
        "chunk-count-bomb",
        "size-overflow",
        "size-null",
        "size-not-the-copys",
        "offset-too-large",
        "page-overflow",
        "text-not-text",
        "unnamed-member",
        "extra-chunk-line",
    ],
)
def test_a_broken_or_hostile_export_is_refused_and_leaves_no_index(
    exported: tuple[BaseApp, Path], tmp_path: Path, broken: object, message: str
) -> None:
    app, good = exported
    bad = _rewritten(good, tmp_path / "bad.zip", broken(good))  # type: ignore[operator]
    with pytest.raises(IndexTransferError, match=message):
        import_index(app.indices, bad, _identity(app), type_id=FILE_INDEX, name="Imported")
    assert [i.name for i in app.indices.indices] == ["My files"]
    assert _file_index(app).check().clean


def test_what_is_not_an_export_or_too_big_or_of_another_model_is_refused(
    exported: tuple[BaseApp, Path], tmp_path: Path
) -> None:
    app, good = exported
    text = tmp_path / "notes.zip"
    text.write_text("not a zip", encoding="utf-8")
    with pytest.raises(IndexTransferError, match="is not an index export"):
        import_index(app.indices, text, _identity(app), type_id=FILE_INDEX)
    with pytest.raises(IndexTransferError, match="unpacks to"):
        import_index(
            app.indices, good, _identity(app), type_id=FILE_INDEX, limits=ImportLimits(max_bytes=10)
        )
    other = {**_identity(app), "model": "another-model"}
    with pytest.raises(IndexTransferError, match="another embedding model"):
        import_index(app.indices, good, other, type_id=FILE_INDEX, name="Imported")
    with pytest.raises(ValueError, match=r"exists|taken|unique|UNIQUE"):
        import_index(app.indices, good, _identity(app), type_id=FILE_INDEX)  # "My files"
    assert [i.name for i in app.indices.indices] == ["My files"]


@pytest.mark.parametrize("name", ["", "  "])
def test_an_empty_name_for_the_imported_index_is_refused(
    exported: tuple[BaseApp, Path], name: str
) -> None:
    """``--name ""`` was passed over for the exported index's name."""
    app, good = exported
    with pytest.raises(IndexNameError, match=r"^an index needs a name$"):
        import_index(app.indices, good, _identity(app), type_id=FILE_INDEX, name=name)
    assert [i.name for i in app.indices.indices] == ["My files"]


def test_an_export_damaged_or_packed_oddly_is_refused_and_leaves_no_index(
    exported: tuple[BaseApp, Path], tmp_path: Path
) -> None:
    app, good = exported
    stored, odd = tmp_path / "stored.zip", tmp_path / "bzip2.zip"
    with zipfile.ZipFile(good) as source:
        members = {name: source.read(name) for name in source.namelist()}
    for target, packing in ((stored, zipfile.ZIP_STORED), (odd, zipfile.ZIP_BZIP2)):
        with zipfile.ZipFile(target, "w") as out:
            for name, data in members.items():
                out.writestr(name, data, packing if name == "chunks.jsonl" else zipfile.ZIP_STORED)
    data = bytearray(stored.read_bytes())  # one byte of a chunk's text changed: a bad CRC
    where = data.index(members["chunks.jsonl"][:40]) + 30
    data[where] ^= 0x01
    damaged = tmp_path / "damaged.zip"
    damaged.write_bytes(bytes(data))
    for path, message in ((damaged, "the export is damaged"), (odd, "compressed in a way")):
        with pytest.raises(IndexTransferError, match=message):
            import_index(app.indices, path, _identity(app), type_id=FILE_INDEX, name="Imported")
        assert [i.name for i in app.indices.indices] == ["My files"]


def _manifest_damaged(good: Path, target: Path, packing: int) -> Path:
    """A copy of ``good`` whose manifest's first stored bytes are overwritten: a bad CRC
    when stored, a broken deflate stream (a block of no type) when compressed."""
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(target, "w") as out:
        for name in source.namelist():
            out.writestr(name, source.read(name), packing)
    with zipfile.ZipFile(target) as archive:
        info = archive.getinfo("manifest.json")
    data = bytearray(target.read_bytes())
    # The member's bytes follow its local header (30 bytes, its name, its extra field).
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start : start + 8] = b"\xff" * 8
    target.write_bytes(bytes(data))
    return target


@pytest.mark.parametrize(
    ("packing", "why"),
    [(zipfile.ZIP_STORED, "Bad CRC-32"), (zipfile.ZIP_DEFLATED, "Error -3")],
    ids=["bad-crc", "broken-deflate"],
)
def test_an_export_whose_manifest_is_damaged_is_refused_in_words(
    exported: tuple[BaseApp, Path], tmp_path: Path, packing: int, why: str
) -> None:
    """Its members were checked as they were read, the manifest, read first, was not: a
    traceback."""
    app, good = exported
    damaged = _manifest_damaged(good, tmp_path / "damaged.zip", packing)
    with pytest.raises(IndexTransferError, match=f"^the export is damaged: {why}"):
        import_index(app.indices, damaged, _identity(app), type_id=FILE_INDEX, name="Imported")
    assert [i.name for i in app.indices.indices] == ["My files"]


def _with_config(good: Path, target: Path, **config: object) -> Path:
    """A copy of ``good`` whose index settings have ``config`` on top."""
    with zipfile.ZipFile(good) as archive:
        index = json.loads(archive.read("manifest.json"))["index"]
    index["config"].update(config)
    return _rewritten(good, target, {"manifest.json": _manifest(good, index=index)})


def test_an_imported_index_keeps_its_settings_as_its_type_checks_and_types_them(
    exported: tuple[BaseApp, Path], tmp_path: Path
) -> None:
    """Checked, then stored as they were written: a chunk size of "300" or 300.7 was
    kept so, for each file indexed into it later to be chunked by."""
    app, good = exported
    typed = _with_config(good, tmp_path / "typed.zip", chunk_size="300", chunk_overlap=30.0)
    index, _ = import_index(app.indices, typed, _identity(app), type_id=FILE_INDEX, name="A")
    assert (index.config["chunk_size"], index.config["chunk_overlap"]) == (300, 30)
    assert all(type(index.config[k]) is int for k in ("chunk_size", "chunk_overlap"))
    for size in (300.7, True):
        bad = _with_config(good, tmp_path / "bad.zip", chunk_size=size)
        with pytest.raises(
            IndexTransferError,
            match=r"^the export's index settings are not usable: chunk size and overlap "
            r"must be whole numbers$",
        ):
            import_index(app.indices, bad, _identity(app), type_id=FILE_INDEX, name="B")
    assert [i.name for i in app.indices.indices] == ["My files", "A"]


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
        app.indices, good, _identity(app), type_id=FILE_INDEX, name="Imported"
    )
    assert report.sources == 3 and seen == []  # nothing taken over
    assert [i.name for i in app.indices.readable_by("someone-else")] == ["My files", "Imported"]
    assert index.check().clean and {s["status"] for s in index.list_sources()} == {"indexed"}


def test_an_export_is_written_only_into_a_folder_that_exists(
    exported: tuple[BaseApp, Path], tmp_path: Path
) -> None:
    app, _ = exported
    index = _file_index(app)
    with pytest.raises(IndexTransferError, match="no folder"):
        export_index(index, tmp_path / "missing" / "x.zip", _identity(app))
    with pytest.raises(IndexTransferError, match="is a folder"):
        export_index(index, tmp_path, _identity(app))


def test_an_export_leaves_out_a_file_removed_while_it_is_written(
    exported: tuple[BaseApp, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, _ = exported
    index = _file_index(app)
    first, *_ = index.list_sources()
    vectors = index.vector_store.vectors

    def removed_meanwhile(ids: list[str]) -> dict[str, object]:
        if any(i.startswith(str(first["id"])) for i in ids):
            index.get_indexing_pipeline({}).remove(str(first["id"]))
        return vectors(ids)

    monkeypatch.setattr(index.vector_store, "vectors", removed_meanwhile)
    report = export_index(index, tmp_path / "during.zip", _identity(app))
    assert (report.sources, report.chunks) == (2, 2)
    monkeypatch.undo()
    moved, _ = import_index(
        app.indices, tmp_path / "during.zip", _identity(app), type_id=FILE_INDEX, name="Moved"
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
    twice = _rewritten(
        good,
        tmp_path / "twice.zip",
        {
            "sources.jsonl": b"".join([sources[0], *sources]),
            "chunks.jsonl": b"".join([chunks[0], *chunks]),
            "vectors.f32": vectors[:width] + vectors,
            "manifest.json": _manifest(good, sources=len(sources) + 1, chunks=len(chunks) + 1),
        },
    )
    index, report = import_index(
        app.indices, twice, _identity(app), type_id=FILE_INDEX, name="Imported"
    )
    assert report.sources == len(sources) == len(index.list_sources())
    assert index.check().clean
