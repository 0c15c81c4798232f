"""``ragloom index export`` and ``import`` keep the rules the rest of Ragloom keeps: an
import takes only files an upload to the new index would take, an export holds what its
import needs (every file's stored copy), and what it cannot write is said in words."""

from __future__ import annotations

import json
import os
import stat
import zipfile
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from ragloom_app.app import BaseApp
from ragloom_app.db.models import Source
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.recovery import IMPORT_LOCK
from ragloom_app.index.file.transfer import (
    IndexTransferError,
    embedding_identity,
    export,
    export_index,
    import_index,
)
from ragloom_app.index.file.worklock import WorkLock
from tests.helpers.api_server import replay_app

FILE_INDEX = "ragloom_app.index.file.FileIndex"

DOCUMENTS = {
    "reactor.md": "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin.",
    "badge.txt": "Visitors wear a yellow badge; staff wear a blue one.",
}


def _identity(app: BaseApp) -> dict[str, object]:
    spec = app.settings.embeddings[app.settings.default_embedding]
    return embedding_identity(spec, app.embeddings().dimension)


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[BaseApp, FileIndex]:
    """An app whose "My files" holds :data:`DOCUMENTS`."""
    app = replay_app(tmp_path / "app")
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCUMENTS.items():
        (folder / name).write_text(text, encoding="utf-8")
    index = app.indices.get("My files")
    assert isinstance(index, FileIndex)
    outcomes = index.get_indexing_pipeline({}).run([folder / n for n in DOCUMENTS])
    assert [o.status for o in outcomes] == ["indexed"] * len(DOCUMENTS)
    return app, index


def test_an_index_missing_a_stored_copy_is_not_exported_until_it_is_repaired(
    indexed: tuple[BaseApp, FileIndex], tmp_path: Path
) -> None:
    """Its import would refuse the file (it is indexed again, and checked, from its
    copy): the export says what to do instead of writing what cannot be imported."""
    app, index = indexed
    for stored in index.files_dir.iterdir():
        if stored.suffix == ".md":
            stored.unlink()
    target = tmp_path / "export.zip"
    with pytest.raises(
        IndexTransferError, match=r"stored copy of 'reactor.md' is missing.*--repair"
    ):
        export_index(index, target, _identity(app))
    assert not target.exists()
    index.check(repair=True)  # fails the file: an export leaves it out
    report = export_index(index, target, _identity(app))
    assert (report.sources, report.skipped) == (1, 1)


def test_an_index_an_import_has_not_finished_is_not_exported(
    indexed: tuple[BaseApp, FileIndex], tmp_path: Path
) -> None:
    """Its export would carry no mark of being half made, and be imported elsewhere as a
    whole index: one being filled, and one whose import was killed, are refused."""
    app, index = indexed
    target = tmp_path / "export.zip"
    mark = WorkLock(index.locks_dir, IMPORT_LOCK)
    mark.acquire_new()  # as an import holds it while it fills the index
    try:
        with pytest.raises(IndexTransferError, match="an import is still filling 'My files'"):
            export_index(index, target, _identity(app))
    finally:
        mark.release(keep_file=True)  # as an import killed outright leaves it
    with pytest.raises(IndexTransferError, match=r"'My files' is half made: .*--repair"):
        export_index(index, target, _identity(app))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app", "docs"]


def test_an_index_stored_through_another_data_folder_is_exported_there(
    indexed: tuple[BaseApp, FileIndex], tmp_path: Path
) -> None:
    """App processes that share the database each keep the copies of what they indexed:
    the export says where to run, not to repair (which would not help)."""
    app, index = indexed
    elsewhere = tmp_path / "another-machine" / "files"  # a folder this process cannot see
    with Session(app.engine) as session:
        for source in session.exec(select(Source)).all():
            assert source.stored_path is not None
            stored = Path(source.stored_path)
            stored.unlink()
            source.stored_path = str(elsewhere / stored.name)
            session.add(source)
        session.commit()
    with pytest.raises(IndexTransferError, match="stored through another data folder"):
        export_index(index, tmp_path / "export.zip", _identity(app))


def test_a_stored_copy_that_cannot_be_read_is_named_not_the_target(
    indexed: tuple[BaseApp, FileIndex], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exported into the folder above the data folder, a copy it could not read was
    reported as the export it could not write."""
    app, index = indexed
    write = zipfile.ZipFile.write

    def refused(self: zipfile.ZipFile, filename: Any, *args: Any, **kwargs: Any) -> None:
        if Path(filename).parent == index.files_dir:  # named as a relative data folder has it
            raise PermissionError(13, "Permission denied", os.path.relpath(filename))
        write(self, filename, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "write", refused)
    monkeypatch.chdir(index.files_dir.parents[3])  # the data folder's own parent
    with pytest.raises(IndexTransferError, match=r"^cannot read '.*files/.*': Permission"):
        export_index(index, Path("export.zip"), _identity(app))


def _with_first_file(
    good: Path, target: Path, name: str, config: dict[str, Any] | None = None
) -> Path:
    """A copy of the export ``good`` whose first file is called ``name`` (and whose
    index has ``config``)."""
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(target, "w") as out:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "sources.jsonl":
                first, rest = data.split(b"\n", 1)
                data = json.dumps({**json.loads(first), "name": name}).encode() + b"\n" + rest
            elif info.filename == "manifest.json" and config is not None:
                manifest = json.loads(data)
                manifest["index"]["config"].update(config)
                data = json.dumps(manifest).encode()
            out.writestr(info.filename, data)
    return target


@pytest.mark.parametrize(
    ("name", "config", "message"),
    [
        ("payload.exe", None, r"holds 'payload.exe', which this index refuses: unsupported "),
        ("notes.txt", {"extensions": [".md"]}, r"'notes.txt'.*unsupported file type '.txt'"),
        ("bundle.zip", None, "'bundle.zip', which this index refuses: an archive is indexed as"),
        ("bundle.zip/inner.zip", None, "'bundle.zip/inner.zip'.*an archive is indexed as"),
        ("bundle.zip/tool.exe", None, "'bundle.zip/tool.exe'.*unsupported file type '.exe'"),
        ("bundle.zip/a.md", {"extensions": [".md"]}, "'bundle.zip/a.md'.*type '.zip'"),
        ("not/an/archive.md", None, "bad record .*folders in it, yet 'not' is not an archive"),
        ("C:\\docs\\report.md", None, r"bad record \(the file name has folders in it\)"),
        ("bundle.zip/../../etc.md", None, "bad record .*unsafe path in the archive"),
        ("bundle.zip/", None, "bad record .*archive member has no name"),
    ],
    ids=[
        "type-not-taken",
        "type-not-in-config",
        "archive-whole",
        "archive-in-archive",
        "member-type-not-taken",
        "archive-not-taken",
        "folders-outside-an-archive",
        "windows-folders",
        "member-leaves-archive",
        "member-without-name",
    ],
)
def test_an_import_refuses_a_file_an_upload_to_the_index_would_refuse(
    indexed: tuple[BaseApp, FileIndex],
    tmp_path: Path,
    name: str,
    config: dict[str, Any] | None,
    message: str,
) -> None:
    """The type the new index takes (its `extensions`) and the names uploads make: a
    file's name, or an archive member's under the archive's (``bundle.zip/a.md``)."""
    app, index = indexed
    export_index(index, tmp_path / "good.zip", _identity(app))
    bad = _with_first_file(tmp_path / "good.zip", tmp_path / "bad.zip", name, config)
    with pytest.raises(IndexTransferError, match=message):
        import_index(app.indices, bad, _identity(app), type_id=FILE_INDEX, name="Imported")
    assert [i.name for i in app.indices.indices] == ["My files"]


def test_an_import_refuses_a_stored_copy_past_this_deployments_file_limit_saying_it(
    indexed: tuple[BaseApp, FileIndex], tmp_path: Path
) -> None:
    """In readable units: a limit under a megabyte once read "(0 MB)"."""
    app, index = indexed
    export_index(index, tmp_path / "good.zip", _identity(app))
    small = replay_app(tmp_path / "small", max_file_bytes=40)
    with pytest.raises(IndexTransferError, match=r"limit for a file \(40 bytes\)$"):
        import_index(
            small.indices, tmp_path / "good.zip", _identity(small), type_id=FILE_INDEX, name="I"
        )
    assert [i.name for i in small.indices.indices] == ["My files"]


def test_an_archive_member_imports_under_its_archive_name(
    indexed: tuple[BaseApp, FileIndex], tmp_path: Path
) -> None:
    app, index = indexed
    export_index(index, tmp_path / "good.zip", _identity(app))
    member = _with_first_file(tmp_path / "good.zip", tmp_path / "m.zip", "bundle.zip/d/reactor.md")
    moved, _ = import_index(app.indices, member, _identity(app), type_id=FILE_INDEX, name="Moved")
    assert sorted(s["name"] for s in moved.list_sources()) == [
        "badge.txt",
        "bundle.zip/d/reactor.md",
    ]


def test_a_private_index_is_imported_private_to_its_new_owner_unless_shared(
    tmp_path: Path,
) -> None:
    """Alice's private index, exported: imported on another deployment it is the owner's
    given (the local user by default) and read by nobody else until shared explicitly."""
    app = replay_app(tmp_path / "app")
    config = app.indices.normalize_config(FILE_INDEX, {"visibility": "private"})
    private = app.indices.create("Alice's notes", FILE_INDEX, config, owner="alice", shared=False)
    assert isinstance(private, FileIndex)
    (tmp_path / "secret.md").write_text("# Vault\n\nThe vault code is 7741.", encoding="utf-8")
    private.get_indexing_pipeline({}).run([tmp_path / "secret.md"])
    export_index(private, tmp_path / "private.zip", _identity(app))

    other = replay_app(tmp_path / "other")
    identity = _identity(other)
    kept, _ = import_index(other.indices, tmp_path / "private.zip", identity, type_id=FILE_INDEX)
    assert (other.indices.access(kept).owner, other.indices.access(kept).shared) == ("local", False)
    assert kept.config["visibility"] == "private"
    assert [i.name for i in other.indices.readable_by("bob")] == ["My files"]
    owned, _ = import_index(
        other.indices,
        tmp_path / "private.zip",
        identity,
        type_id=FILE_INDEX,
        name="Carol's",
        owner="carol",
    )
    assert other.indices.access(owned).owner == "carol"
    assert [i.name for i in other.indices.readable_by("carol")] == ["My files", "Carol's"]
    shared, _ = import_index(
        other.indices,
        tmp_path / "private.zip",
        identity,
        type_id=FILE_INDEX,
        name="Everyone's",
        shared=True,
    )
    assert shared.config["visibility"] == "shared"
    assert [i.name for i in other.indices.readable_by("bob")] == ["My files", "Everyone's"]


def test_an_export_is_never_written_over_a_file_unless_asked(
    indexed: tuple[BaseApp, FileIndex], tmp_path: Path
) -> None:
    app, index = indexed
    target = tmp_path / "notes.zip"
    target.write_bytes(b"a file of the user's")
    with pytest.raises(IndexTransferError, match=r"notes.zip' exists: .*--force to replace it"):
        export_index(index, target, _identity(app))
    assert target.read_bytes() == b"a file of the user's"
    report = export_index(index, target, _identity(app), overwrite=True)
    assert report.sources == len(DOCUMENTS) and zipfile.is_zipfile(target)


def test_an_export_replaces_only_a_regular_file_even_with_force(
    indexed: tuple[BaseApp, FileIndex], tmp_path: Path
) -> None:
    """``--force`` renamed the export over whatever had the name: a link (as root,
    ``/dev/stdout`` is one) or a pipe was replaced, the file it led to left as it was."""
    app, index = indexed
    kept = tmp_path / "kept.txt"
    kept.write_text("a file of the user's", encoding="utf-8")
    link, pipe = tmp_path / "link.zip", tmp_path / "pipe.zip"
    link.symlink_to(kept)
    os.mkfifo(pipe)
    for target in (link, pipe):
        for overwrite in (False, True):
            with pytest.raises(
                IndexTransferError, match=r"is not a regular file .*: name another file"
            ):
                export_index(index, target, _identity(app), overwrite=overwrite)
    assert link.is_symlink() and kept.read_text(encoding="utf-8") == "a file of the user's"
    assert stat.S_ISFIFO(pipe.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "app",
        "docs",
        "kept.txt",
        "link.zip",
        "pipe.zip",
    ]


def test_an_export_keeps_a_file_made_at_its_name_while_it_ran(
    indexed: tuple[BaseApp, FileIndex], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, index = indexed
    target = tmp_path / "notes.zip"
    write_zip = export._write_zip

    def someone_writes_meanwhile(partial: Path, *args: Any) -> None:
        target.write_bytes(b"made meanwhile")
        write_zip(partial, *args)

    monkeypatch.setattr(export, "_write_zip", someone_writes_meanwhile)
    with pytest.raises(IndexTransferError, match="exists"):
        export_index(index, target, _identity(app))
    assert target.read_bytes() == b"made meanwhile"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app", "docs", "notes.zip"]


def test_what_an_export_cannot_write_is_said_in_words(
    indexed: tuple[BaseApp, FileIndex], tmp_path: Path
) -> None:
    """A name longer than the file system takes (an OSError, as a read-only folder or a
    full disk is): the target and why, nothing left behind."""
    app, index = indexed
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(
        IndexTransferError, match=r"^cannot write '.*/xxxx+\.zip': File name too long$"
    ):
        export_index(index, out / ("x" * 300 + ".zip"), _identity(app))
    assert list(out.iterdir()) == []


def test_an_export_takes_a_name_as_long_as_the_file_system_does(
    indexed: tuple[BaseApp, FileIndex], tmp_path: Path
) -> None:
    """Written first under its own name with a dot before and ``.partial`` after, an
    export of a name up to 9 bytes short of the limit failed as a name too long."""
    app, index = indexed
    out = tmp_path / "out"
    out.mkdir()
    longest = "x" * (os.pathconf(out, "PC_NAME_MAX") - len(".zip")) + ".zip"
    report = export_index(index, out / longest, _identity(app))
    assert report.sources == len(DOCUMENTS)
    assert [p.name for p in out.iterdir()] == [longest] and zipfile.is_zipfile(out / longest)
