"""expand_zip on archives built here: normal ones, bombs, escaping names and odd members.

Every test that unpacks lists all files under ``tmp_path`` afterwards: nothing may appear
anywhere but in ``dest``.
"""

from __future__ import annotations

import io
import os
import stat
import struct
import zipfile
from collections.abc import Callable
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
from ragloom.loaders.archive import ZipLimits, declared_entries
from tests.helpers.zip_bombs import docx_bomb, zip_of_repeats

# (signature, offset of the name length, offset of the name, offsets of patched fields)
_LOCAL_HEADER = (b"PK\x03\x04", 26, 30, {"flags": (6, "<H"), "size": (22, "<I")})
_CENTRAL_HEADER = (b"PK\x01\x02", 28, 46, {"flags": (8, "<H"), "size": (24, "<I")})


def _zip(path: Path, members: dict[str, bytes | str], *, stored: bool = False) -> Path:
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=method)
    return path


def _patch(path: Path, name: str, field: str, change: Callable[[int], int]) -> None:
    """Rewrite ``field`` of member ``name`` in both its local and central headers.

    zipfile resets flag bits and computes sizes when writing, so archives with an
    encryption flag or a lying size are made by editing the bytes afterwards.
    """
    data = bytearray(path.read_bytes())
    encoded = name.encode()
    patched = 0
    for signature, length_at, name_at, fields in (_LOCAL_HEADER, _CENTRAL_HEADER):
        offset, fmt = fields[field]
        start = 0
        while (at := data.find(signature, start)) != -1:
            start = at + 4
            (length,) = struct.unpack_from("<H", data, at + length_at)
            if bytes(data[at + name_at : at + name_at + length]) != encoded:
                continue
            (value,) = struct.unpack_from(fmt, data, at + offset)
            struct.pack_into(fmt, data, at + offset, change(value))
            patched += 1
    assert patched == 2, f"{name}: found {patched} headers"
    path.write_bytes(bytes(data))


def _all_files(root: Path) -> set[Path]:
    return {Path(d, f) for d, _, files in os.walk(root) for f in files}


def test_unpacks_files_under_dest_with_their_names(tmp_path: Path) -> None:
    upload = _zip(
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
    assert _all_files(tmp_path) == {upload} | {m.path for m in contents.members}


def test_names_that_try_to_escape_are_skipped(tmp_path: Path) -> None:
    # An absolute name like /etc/passwd, aimed inside tmp_path so that a regression shows up
    # in the listing below instead of overwriting a file of the machine.
    absolute = str(tmp_path / "absolute.txt")
    upload = _zip(
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
    assert _all_files(tmp_path) == {upload, dest / "0008-ok.txt"}


def test_zip_bomb_by_compression_ratio(tmp_path: Path) -> None:
    upload = _zip(tmp_path / "bomb.zip", {"zeros.txt": bytes(50 * 1024 * 1024)})
    assert upload.stat().st_size < 100_000
    dest = tmp_path / "out"
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, dest)
    assert info.value.reason.startswith("'zeros.txt' is compressed ")
    assert info.value.reason.endswith(" to 1, more than the limit of 200 to 1 (a zip bomb?)")
    assert info.value.path == upload
    assert not dest.exists()
    assert _all_files(tmp_path) == {upload}


def test_small_members_are_not_judged_by_ratio(tmp_path: Path) -> None:
    # 100 KB of one character compresses about 1000 to 1, but is harmless.
    upload = _zip(tmp_path / "upload.zip", {"spaces.txt": " " * 100_000 + "end"})
    contents = expand_zip(upload, tmp_path / "out")
    assert [m.name for m in contents.members] == ["spaces.txt"]


def test_ratio_limit_is_a_setting(tmp_path: Path) -> None:
    upload = _zip(tmp_path / "upload.zip", {"text.txt": "all work and no play " * 100_000})
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "out", max_ratio=5)
    assert "more than the limit of 5 to 1" in info.value.reason
    assert len(expand_zip(upload, tmp_path / "out", max_ratio=1000).members) == 1


def test_total_size_limit(tmp_path: Path) -> None:
    upload = _zip(tmp_path / "upload.zip", {f"{i}.txt": os.urandom(10_000).hex() for i in range(3)})
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "out", max_total_bytes=50_000)
    assert info.value.reason == (
        "the archive would unpack to 58.6 KB, more than the limit of 48.8 KB (a zip bomb?)"
    )
    assert _all_files(tmp_path) == {upload}


def test_members_just_under_the_ratio_floor_are_judged_as_a_whole(tmp_path: Path) -> None:
    # 40 members of 1 MiB less a byte: none is judged alone; the archive is 40 MB in 64 KB.
    upload = zip_of_repeats(tmp_path / "bomb.zip", {f"{i}.xml": (1 << 20) - 1 for i in range(40)})
    assert upload.stat().st_size < 100_000
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "out")
    assert info.value.reason.startswith("the archive would unpack to 40.0 MB from ")
    assert info.value.reason.endswith(
        "to 1 as a whole, more than the limit of 200 to 1 (a zip bomb?)"
    )
    assert _all_files(tmp_path) == {upload}


def test_a_nested_archive_behind_a_prefix_counts_too(tmp_path: Path) -> None:
    # zipfile (and python-docx) open a zip that follows other bytes: so must the count.
    inner = docx_bomb(tmp_path / "inner.docx", 8 << 20)
    disguised = b"MZ" + b"\x00" * 8190 + inner.read_bytes()
    upload = _zip(tmp_path / "upload.zip", {"notes.md": "# Notes\n", "report.docx": disguised})
    inner.unlink()
    with pytest.raises(UnreadableFileError, match=r"'report\.docx' is itself an archive"):
        expand_zip(upload, tmp_path / "out")


def test_a_directory_of_too_many_entries_is_refused_from_its_end_record(tmp_path: Path) -> None:
    # Empty folders cost nothing to store and about 460 bytes each to list: refused first.
    upload = tmp_path / "folders.zip"
    with zipfile.ZipFile(upload, "w") as archive:
        for number in range(5000):
            archive.writestr(f"d{number}/", b"")
        archive.writestr("notes.md", "# Notes\n")
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "out")
    assert info.value.reason == (
        "the archive lists 5,001 entries (files and folders), more than the limit of 4,000"
    )
    # Inside another archive (as a document: .zip members are never unpacked) as well.
    nested = _zip(tmp_path / "outer.zip", {"inner.odt": upload.read_bytes()})
    refused = r"'inner\.odt' is itself an archive, and it lists"
    with pytest.raises(UnreadableFileError, match=refused):
        expand_zip(nested, tmp_path / "out2")


def test_a_directory_is_bounded_by_its_size_when_its_count_lies(tmp_path: Path) -> None:
    # The end record's count says 1, but zipfile lists whatever its directory holds.
    upload = tmp_path / "liar.zip"
    with zipfile.ZipFile(upload, "w") as archive:
        for number in range(50_000):  # 50,000 entries of some 150 bytes: 7 MB to list
            archive.writestr(f"{'d' * 90}{number}/", b"")
    data = bytearray(upload.read_bytes())
    end = data.rindex(b"PK\x05\x06")
    data[end + 8 : end + 12] = (1).to_bytes(2, "little") * 2  # entries on disk, in all
    upload.write_bytes(bytes(data))
    assert declared_entries(upload) == 1
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "out")
    assert info.value.reason.startswith("the archive has a directory of ")
    assert info.value.reason.endswith("more than the limit of 4.0 MB")


def test_a_broken_end_record_fails_the_archive_alone(tmp_path: Path) -> None:
    # A zip64 locator that claims several disks: zipfile raises BadZipFile reading it.
    upload = tmp_path / "disks.zip"
    locator = b"PK\x06\x07" + (0).to_bytes(4, "little") + (0).to_bytes(8, "little")
    locator += (2).to_bytes(4, "little")  # total number of disks
    end = b"PK\x05\x06" + b"\x00" * 18
    upload.write_bytes(b"junk" + locator + end)
    assert declared_entries(upload) is None
    with pytest.raises(UnreadableFileError, match="not a valid zip archive"):
        expand_zip(upload, tmp_path / "out")


def test_a_document_inside_counts_as_a_nested_archive(tmp_path: Path) -> None:
    # The .docx member itself barely compresses; what it unpacks to is what counts.
    inner = docx_bomb(tmp_path / "inner.docx", 8 << 20)
    assert declared_entries(inner) == 2
    upload = _zip(
        tmp_path / "upload.zip", {"notes.md": "# Notes\n", "report.docx": inner.read_bytes()}
    )
    inner.unlink()
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "out")
    assert info.value.reason.startswith(
        "'report.docx' is itself an archive that unpacks to 8.0 MB, so the archive would "
        "unpack to 8.0 MB from "
    )
    assert "as a whole, more than the limit of 200 to 1" in info.value.reason
    assert _all_files(tmp_path) == {upload}


def test_nested_totals_count_toward_the_total_limit(tmp_path: Path) -> None:
    # Documents compressed 50 to 1 pass any ratio; together they pass the total.
    docs = {}
    for i in range(3):
        path = tmp_path / f"{i}.docx"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
            package.writestr("word/document.xml", os.urandom(20_000).hex())
        docs[f"doc{i}.docx"] = path.read_bytes()
        path.unlink()
    upload = _zip(tmp_path / "upload.zip", docs)
    contents = expand_zip(upload, tmp_path / "ok", max_total_bytes=200_000)
    assert [m.name for m in contents.members] == ["doc0.docx", "doc1.docx", "doc2.docx"]
    assert contents.unpacked_bytes == sum(len(d) for d in docs.values()) + 3 * 40_000
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "refused", limits=ZipLimits(max_total_bytes=170_000))
    assert info.value.reason.startswith("'doc2.docx' is itself an archive that unpacks to 39.1 KB")
    assert info.value.reason.endswith("more than the limit of 166.0 KB (a zip bomb?)")
    assert not (tmp_path / "refused").exists()


def test_what_the_upload_has_left_bounds_the_archive(tmp_path: Path) -> None:
    upload = _zip(tmp_path / "upload.zip", {"a.txt": os.urandom(5_000).hex()})
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "out", room_bytes=4_000)
    assert info.value.reason == (
        "the archive would unpack to 9.8 KB, more than the 3.9 KB left of the upload's budget"
    )
    assert expand_zip(upload, tmp_path / "out", room_bytes=10_000).unpacked_bytes == 10_000


def test_member_count_limit_counts_files_not_folders(tmp_path: Path) -> None:
    folders: dict[str, bytes | str] = {f"dir{i}/": b"" for i in range(4)}
    upload = _zip(tmp_path / "upload.zip", {**folders, **{f"{i}.txt": "x" for i in range(5)}})
    assert len(expand_zip(upload, tmp_path / "ok", max_members=5).members) == 5
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "refused", max_members=4)
    assert info.value.reason == "the archive has 5 files, more than the limit of 4"
    assert not (tmp_path / "refused").exists()


def test_member_larger_than_its_header_declares_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upload = _zip(tmp_path / "upload.zip", {"a.txt": "first member", "b.txt": "ten bytes!"})
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
    assert _all_files(tmp_path) == {upload}


def test_size_header_that_lies_makes_a_damaged_member(tmp_path: Path) -> None:
    upload = _zip(
        tmp_path / "upload.zip",
        {"lies.txt": "a" * 1000, "ok.txt": "fine"},
        stored=True,
    )
    _patch(upload, "lies.txt", "size", lambda size: size // 10)
    dest = tmp_path / "out"
    contents = expand_zip(upload, dest)
    assert [m.name for m in contents.members] == ["ok.txt"]
    assert contents.skipped == [("lies.txt", "damaged: Bad CRC-32 for file 'lies.txt'")]
    assert _all_files(tmp_path) == {upload, dest / "0002-ok.txt"}


def test_nested_archives_are_not_unpacked(tmp_path: Path) -> None:
    inner = _zip(tmp_path / "inner.zip", {"deep.txt": "inside"}).read_bytes()
    (tmp_path / "inner.zip").unlink()
    upload = _zip(
        tmp_path / "upload.zip",
        {"inner.zip": inner, "more/Archive.ZIP": inner, "top.txt": "outside"},
    )
    contents = expand_zip(upload, tmp_path / "out")
    assert [m.name for m in contents.members] == ["top.txt"]
    reason = "nested archive (archives inside archives are not unpacked)"
    assert contents.skipped == [("inner.zip", reason), ("more/Archive.ZIP", reason)]


def test_encrypted_member_is_skipped(tmp_path: Path) -> None:
    upload = _zip(tmp_path / "upload.zip", {"secret.txt": "hidden", "open.txt": "visible"})
    _patch(upload, "secret.txt", "flags", lambda flags: flags | 0x1)
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
    upload = _zip(tmp_path / "upload.zip", {long_name: "long", odd_name: "odd", "...": "dots"})
    contents = expand_zip(upload, tmp_path / "out")
    assert [m.name for m in contents.members] == [long_name, odd_name, "..."]
    long_path, odd_path, dots_path = (m.path for m in contents.members)
    assert long_path.suffix == ".txt"
    assert len(long_path.name.encode()) <= 130
    assert long_path.read_text() == "long"
    assert odd_path.name == "0002-what________.md"
    assert dots_path.name == "0003-file"


def test_utf8_names_without_the_utf8_flag_are_recovered(tmp_path: Path) -> None:
    upload = _zip(tmp_path / "upload.zip", {"报告.txt": "text"})
    _patch(upload, "报告.txt", "flags", lambda flags: flags & ~0x800)
    with zipfile.ZipFile(upload) as archive:
        assert archive.namelist() != ["报告.txt"]  # zipfile alone reads it as cp437
    assert [m.name for m in expand_zip(upload, tmp_path / "out").members] == ["报告.txt"]


def test_existing_files_in_dest_are_never_overwritten(tmp_path: Path) -> None:
    upload = _zip(tmp_path / "upload.zip", {"a.txt": "from the archive"})
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
    upload = _zip(tmp_path / "upload.zip", {"a.txt": os.urandom(5000).hex()})
    upload.write_bytes(upload.read_bytes()[:-30])  # cut into the central directory
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "out")
    assert info.value.reason.startswith("not a valid zip archive: ")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(tmp_path / "gone.zip", tmp_path / "out")
    assert info.value.reason.startswith("cannot read the file: ")


def test_empty_archives(tmp_path: Path) -> None:
    empty = _zip(tmp_path / "empty.zip", {})
    folders = _zip(tmp_path / "folders.zip", {"a/": b"", "a/b/": b""})
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
