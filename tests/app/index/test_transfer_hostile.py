"""``ragloom index import`` refuses a hostile or broken export whole (a path out of the
archive, a deep JSON, a copy whose hash or size is not its record's, more chunks than
announced, a damaged manifest...), leaving no index behind, and keeps the settings it
takes as the index type checks them."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.index.file.transfer import (
    ImportLimits,
    IndexTransferError,
    import_index,
)
from ragloom_app.index.manager import IndexNameError
from tests.helpers.transfer import (
    FILE_INDEX,
    exported,
    file_index,
    identity,
    manifest_with,
    rewritten,
)

__all__ = ["exported"]

_DEEP = b"[" * 100_000 + b"]" * 100_000  # deeper than Python's stack: a RecursionError


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
        (lambda good: {"manifest.json": manifest_with(good, format=99)}, "manifest is not usable"),
        (lambda good: {"manifest.json": manifest_with(good, chunks=-1)}, "manifest is not usable"),
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
    bad = rewritten(good, tmp_path / "bad.zip", broken(good))  # type: ignore[operator]
    with pytest.raises(IndexTransferError, match=message):
        import_index(app.indices, bad, identity(app), type_id=FILE_INDEX, name="Imported")
    assert [i.name for i in app.indices.indices] == ["My files"]
    assert file_index(app).check().clean


def test_what_is_not_an_export_or_too_big_or_of_another_model_is_refused(
    exported: tuple[BaseApp, Path], tmp_path: Path
) -> None:
    app, good = exported
    text = tmp_path / "notes.zip"
    text.write_text("not a zip", encoding="utf-8")
    with pytest.raises(IndexTransferError, match="is not an index export"):
        import_index(app.indices, text, identity(app), type_id=FILE_INDEX)
    with pytest.raises(IndexTransferError, match=r"unpacks to [\d.]+ KB, the limit is 10 bytes"):
        import_index(
            app.indices, good, identity(app), type_id=FILE_INDEX, limits=ImportLimits(max_bytes=10)
        )
    other = {**identity(app), "model": "another-model"}
    with pytest.raises(IndexTransferError, match="another embedding model"):
        import_index(app.indices, good, other, type_id=FILE_INDEX, name="Imported")
    with pytest.raises(ValueError, match=r"exists|taken|unique|UNIQUE"):
        import_index(app.indices, good, identity(app), type_id=FILE_INDEX)  # "My files"
    assert [i.name for i in app.indices.indices] == ["My files"]


@pytest.mark.parametrize("name", ["", "  "])
def test_an_empty_name_for_the_imported_index_is_refused(
    exported: tuple[BaseApp, Path], name: str
) -> None:
    """``--name ""`` was passed over for the exported index's name."""
    app, good = exported
    with pytest.raises(IndexNameError, match=r"^an index needs a name$"):
        import_index(app.indices, good, identity(app), type_id=FILE_INDEX, name=name)
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
            import_index(app.indices, path, identity(app), type_id=FILE_INDEX, name="Imported")
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
        import_index(app.indices, damaged, identity(app), type_id=FILE_INDEX, name="Imported")
    assert [i.name for i in app.indices.indices] == ["My files"]


def _with_config(good: Path, target: Path, **config: object) -> Path:
    """A copy of ``good`` whose index settings have ``config`` on top."""
    with zipfile.ZipFile(good) as archive:
        index = json.loads(archive.read("manifest.json"))["index"]
    index["config"].update(config)
    return rewritten(good, target, {"manifest.json": manifest_with(good, index=index)})


def test_an_imported_index_keeps_its_settings_as_its_type_checks_and_types_them(
    exported: tuple[BaseApp, Path], tmp_path: Path
) -> None:
    """Checked, then stored as they were written: a chunk size of "300" or 300.7 was
    kept so, for each file indexed into it later to be chunked by."""
    app, good = exported
    typed = _with_config(good, tmp_path / "typed.zip", chunk_size="300", chunk_overlap=30.0)
    index, _ = import_index(app.indices, typed, identity(app), type_id=FILE_INDEX, name="A")
    assert (index.config["chunk_size"], index.config["chunk_overlap"]) == (300, 30)
    assert all(type(index.config[k]) is int for k in ("chunk_size", "chunk_overlap"))
    for size in (300.7, True):
        bad = _with_config(good, tmp_path / "bad.zip", chunk_size=size)
        with pytest.raises(
            IndexTransferError,
            match=r"^the export's index settings are not usable: chunk size and overlap "
            r"must be whole numbers$",
        ):
            import_index(app.indices, bad, identity(app), type_id=FILE_INDEX, name="B")
    assert [i.name for i in app.indices.indices] == ["My files", "A"]
