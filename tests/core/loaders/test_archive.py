"""expand_zip on archives built here: normal ones, escaping names and odd members (its
limits: test_archive_limits.py).

Every test that unpacks lists all files under ``tmp_path`` afterwards: nothing may appear
anywhere but in ``dest``.
"""

from __future__ import annotations

import io
import os
import stat
import zipfile
from pathlib import Path
from typing import IO, Any

import pytest

from ragloom.loaders import (
    ArchiveContents,
    ArchiveMember,
    EmptyDocumentError,
    UnreadableFileError,
    expand_zip,
    read_file,
)
from tests.helpers.zip_files import all_files, patch_header, zip_of


def test_unpacks_files_under_dest_with_their_names(tmp_path: Path) -> None:
    upload = zip_of(
        tmp_path / "upload.zip",
        {
            "report.txt": "Quarterly figures.",
            "docs/": b"",
            "docs/notes.md": "# Notes",
            "win\\sub\\table.csv": "a,b\n1,2\n",
            "./x//y.json": '{"k": "v"}',
            "中文/报告.txt": "中文内容。",
        },
    )
    dest = tmp_path / "out"
    contents = expand_zip(upload, dest)

    assert isinstance(contents, ArchiveContents)
    assert contents.skipped == []
    assert [m.name for m in contents.members] == [
        "report.txt",
        "docs/notes.md",
        "win/sub/table.csv",
        "x/y.json",
        "中文/报告.txt",
    ]
    assert [m.path.name for m in contents.members] == [
        "0001-report.txt",
        "0002-notes.md",  # numbered among files: the folder entry does not count
        "0003-table.csv",
        "0004-y.json",
        "0005-报告.txt",
    ]
    assert contents.members[0] == ArchiveMember("report.txt", dest / "0001-report.txt")
    assert contents.members[4].path.read_text() == "中文内容。"
    # Each member reads like an upload of its own.
    assert read_file(contents.members[2].path)[0].text == "a: 1; b: 2"
    assert all_files(tmp_path) == {upload} | {m.path for m in contents.members}


def test_names_that_try_to_escape_are_skipped(tmp_path: Path) -> None:
    # An absolute name like /etc/passwd, aimed inside tmp_path so that a regression shows up
    # in the listing below instead of overwriting a file of the machine.
    absolute = str(tmp_path / "absolute.txt")
    upload = zip_of(
        tmp_path / "upload.zip",
        {
            "../../x.txt": "escape",
            "../../../y.txt": "escape",
            absolute: "escape",
            "a\\..\\..\\b.txt": "escape",
            "C:\\Windows\\evil.txt": "escape",
            "C:evil.txt": "escape",
            "nul#.txt": "escape",
            "ok.txt": "fine",
        },
    )
    # A NUL in a name (zipfile cuts names there, so write a placeholder and swap it).
    data = upload.read_bytes()
    assert data.count(b"nul#.txt") == 2
    upload.write_bytes(data.replace(b"nul#.txt", b"nul\x00.txt"))

    dest = tmp_path / "a" / "b" / "dest"  # "../.." still lands inside tmp_path
    contents = expand_zip(upload, dest)

    assert contents.members == [ArchiveMember("ok.txt", dest / "0008-ok.txt")]
    assert contents.skipped == [
        ("../../x.txt", "unsafe name: the path leads out of the archive (..)"),
        ("../../../y.txt", "unsafe name: the path leads out of the archive (..)"),
        (absolute, "unsafe name: an absolute path"),
        ("a\\..\\..\\b.txt", "unsafe name: the path leads out of the archive (..)"),
        ("C:\\Windows\\evil.txt", "unsafe name: a path with a drive letter"),
        ("C:evil.txt", "unsafe name: a path with a drive letter"),
        ("nul\\x00.txt", "unsafe name: it contains a NUL character"),
    ]
    assert all_files(tmp_path) == {upload, dest / "0008-ok.txt"}


def test_member_larger_than_its_header_declares_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upload = zip_of(tmp_path / "upload.zip", {"a.txt": "first member", "b.txt": "ten bytes!"})
    real_open = zipfile.ZipFile.open

    def lying_open(
        self: zipfile.ZipFile, name: str | zipfile.ZipInfo, *args: Any, **kwargs: Any
    ) -> IO[bytes]:
        # CPython's zipfile stops at the declared size today; simulate one that does not.
        member = name.filename if isinstance(name, zipfile.ZipInfo) else name
        if member == "b.txt":
            return io.BytesIO(b"x" * 5_000_000)
        return real_open(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", lying_open)
    dest = tmp_path / "out"
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, dest)
    assert (
        info.value.reason
        == "'b.txt' unpacks to more than the 10 bytes its header declares (a zip bomb?)"
    )
    # a.txt had been written: it is gone too, and so is the folder expand_zip made.
    assert not dest.exists()
    assert all_files(tmp_path) == {upload}


def test_size_header_that_lies_makes_a_damaged_member(tmp_path: Path) -> None:
    upload = zip_of(
        tmp_path / "upload.zip",
        {"lies.txt": "a" * 1000, "ok.txt": "fine"},
        stored=True,
    )
    patch_header(upload, "lies.txt", "size", lambda size: size // 10)
    dest = tmp_path / "out"
    contents = expand_zip(upload, dest)
    assert [m.name for m in contents.members] == ["ok.txt"]
    assert contents.skipped == [("lies.txt", "damaged: Bad CRC-32 for file 'lies.txt'")]
    assert all_files(tmp_path) == {upload, dest / "0002-ok.txt"}


def test_nested_archives_are_not_unpacked(tmp_path: Path) -> None:
    inner = zip_of(tmp_path / "inner.zip", {"deep.txt": "inside"}).read_bytes()
    (tmp_path / "inner.zip").unlink()
    upload = zip_of(
        tmp_path / "upload.zip",
        {"inner.zip": inner, "more/Archive.ZIP": inner, "top.txt": "outside"},
    )
    contents = expand_zip(upload, tmp_path / "out")
    assert [m.name for m in contents.members] == ["top.txt"]
    reason = "nested archive (archives inside archives are not unpacked)"
    assert contents.skipped == [("inner.zip", reason), ("more/Archive.ZIP", reason)]


def test_encrypted_member_is_skipped(tmp_path: Path) -> None:
    upload = zip_of(tmp_path / "upload.zip", {"secret.txt": "hidden", "open.txt": "visible"})
    patch_header(upload, "secret.txt", "flags", lambda flags: flags | 0x1)
    with zipfile.ZipFile(upload) as archive:
        assert archive.getinfo("secret.txt").flag_bits & 0x1
    contents = expand_zip(upload, tmp_path / "out")
    assert [m.name for m in contents.members] == ["open.txt"]
    assert contents.skipped == [("secret.txt", "encrypted (password-protected)")]


def test_symbolic_link_is_skipped(tmp_path: Path) -> None:
    upload = tmp_path / "upload.zip"
    with zipfile.ZipFile(upload, "w") as archive:
        link = zipfile.ZipInfo("passwd.txt")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
        archive.writestr("real.txt", "text")
    contents = expand_zip(upload, tmp_path / "out")
    assert [m.name for m in contents.members] == ["real.txt"]
    assert contents.skipped == [("passwd.txt", "symbolic link")]
    assert not any(p.is_symlink() for p in (tmp_path / "out").iterdir())


def test_long_and_odd_names_get_safe_file_names(tmp_path: Path) -> None:
    long_name = "folder/" + "长" * 300 + ".txt"  # 900 bytes of UTF-8
    odd_name = 'what?:*<>|"\x01.md'
    upload = zip_of(tmp_path / "upload.zip", {long_name: "long", odd_name: "odd", "...": "dots"})
    contents = expand_zip(upload, tmp_path / "out")
    assert [m.name for m in contents.members] == [long_name, odd_name, "..."]
    long_path, odd_path, dots_path = (m.path for m in contents.members)
    assert long_path.suffix == ".txt"
    assert len(long_path.name.encode()) <= 130
    assert long_path.read_text() == "long"
    assert odd_path.name == "0002-what________.md"
    assert dots_path.name == "0003-file"


def test_utf8_names_without_the_utf8_flag_are_recovered(tmp_path: Path) -> None:
    upload = zip_of(tmp_path / "upload.zip", {"报告.txt": "text"})
    patch_header(upload, "报告.txt", "flags", lambda flags: flags & ~0x800)
    with zipfile.ZipFile(upload) as archive:
        assert archive.namelist() != ["报告.txt"]  # zipfile alone reads it as cp437
    assert [m.name for m in expand_zip(upload, tmp_path / "out").members] == ["报告.txt"]


def test_existing_files_in_dest_are_never_overwritten(tmp_path: Path) -> None:
    upload = zip_of(tmp_path / "upload.zip", {"a.txt": "from the archive"})
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "0001-a.txt").write_text("already here")
    with pytest.raises(FileExistsError):
        expand_zip(upload, dest)
    assert (dest / "0001-a.txt").read_text() == "already here"


@pytest.mark.parametrize(
    "data",
    [b"this is not a zip file at all" * 10, b"PK\x03\x04" + bytes(200)],
    ids=["text", "truncated-header"],
)
def test_not_a_zip(tmp_path: Path, data: bytes) -> None:
    upload = tmp_path / "upload.zip"
    upload.write_bytes(data)
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "out")
    assert info.value.reason == "not a valid zip archive: File is not a zip file"
    assert not (tmp_path / "out").exists()


def test_truncated_zip(tmp_path: Path) -> None:
    upload = zip_of(tmp_path / "upload.zip", {"a.txt": os.urandom(5000).hex()})
    upload.write_bytes(upload.read_bytes()[:-30])  # cut into the central directory
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "out")
    assert info.value.reason.startswith("not a valid zip archive: ")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(tmp_path / "gone.zip", tmp_path / "out")
    assert info.value.reason.startswith("cannot read the file: ")


def test_empty_archives(tmp_path: Path) -> None:
    empty = zip_of(tmp_path / "empty.zip", {})
    folders = zip_of(tmp_path / "folders.zip", {"a/": b"", "a/b/": b""})
    for upload in (empty, folders):
        with pytest.raises(EmptyDocumentError) as info:
            expand_zip(upload, tmp_path / "out")
        assert info.value.reason == "the archive has no files"
    zero = tmp_path / "zero.zip"
    zero.write_bytes(b"")
    with pytest.raises(EmptyDocumentError) as info:
        expand_zip(zero, tmp_path / "out")
    assert info.value.reason == "the file is empty"
    assert not (tmp_path / "out").exists()
