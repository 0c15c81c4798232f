"""expand_zip's limits: compression ratio, totals, entries, directory size, nested archives
(Office files included) and what the upload has left.

Every test that unpacks lists all files under ``tmp_path`` afterwards: nothing may appear
anywhere but in ``dest``.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import docx
import pytest

from ragloom.loaders import (
    DocxReader,
    UnreadableFileError,
    expand_zip,
)
from ragloom.loaders.archive import ZipLimits, declared_entries
from tests.helpers.zip_bombs import docx_bomb, zip_of_repeats
from tests.helpers.zip_files import all_files, zip_of


def test_zip_bomb_by_compression_ratio(tmp_path: Path) -> None:
    upload = zip_of(tmp_path / "bomb.zip", {"zeros.txt": bytes(50 * 1024 * 1024)})
    assert upload.stat().st_size < 100_000
    dest = tmp_path / "out"
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, dest)
    assert info.value.reason.startswith("'zeros.txt' is compressed ")
    assert info.value.reason.endswith(" to 1, more than the limit of 200 to 1 (a zip bomb?)")
    assert info.value.path == upload
    assert not dest.exists()
    assert all_files(tmp_path) == {upload}


def test_small_members_are_not_judged_by_ratio(tmp_path: Path) -> None:
    # 100 KB of one character compresses about 1000 to 1, but is harmless.
    upload = zip_of(tmp_path / "upload.zip", {"spaces.txt": " " * 100_000 + "end"})
    contents = expand_zip(upload, tmp_path / "out")
    assert [m.name for m in contents.members] == ["spaces.txt"]


def test_ratio_limit_is_a_setting(tmp_path: Path) -> None:
    upload = zip_of(tmp_path / "upload.zip", {"text.txt": "all work and no play " * 100_000})
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "out", max_ratio=5)
    assert "more than the limit of 5 to 1" in info.value.reason
    assert len(expand_zip(upload, tmp_path / "out", max_ratio=1000).members) == 1


def test_total_size_limit(tmp_path: Path) -> None:
    upload = zip_of(
        tmp_path / "upload.zip", {f"{i}.txt": os.urandom(10_000).hex() for i in range(3)}
    )
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "out", max_total_bytes=50_000)
    assert info.value.reason == (
        "the archive would unpack to 58.6 KB, more than the limit of 48.8 KB (a zip bomb?)"
    )
    assert all_files(tmp_path) == {upload}


def test_members_just_under_the_ratio_floor_are_judged_as_a_whole(tmp_path: Path) -> None:
    # 40 members of 1 MiB less a byte: none is judged alone; the archive is 40 MB in 64 KB.
    upload = zip_of_repeats(tmp_path / "bomb.zip", {f"{i}.xml": (1 << 20) - 1 for i in range(40)})
    assert upload.stat().st_size < 100_000
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "out")
    assert info.value.reason.startswith("the archive would unpack to 40 MB from ")
    assert info.value.reason.endswith(
        "to 1 as a whole, more than the limit of 200 to 1 (a zip bomb?)"
    )
    assert all_files(tmp_path) == {upload}


def test_a_nested_archive_behind_a_prefix_counts_too(tmp_path: Path) -> None:
    # zipfile (and python-docx) open a zip that follows other bytes: so must the count.
    inner = docx_bomb(tmp_path / "inner.docx", 8 << 20)
    disguised = b"MZ" + b"\x00" * 8190 + inner.read_bytes()
    upload = zip_of(tmp_path / "upload.zip", {"notes.md": "# Notes\n", "report.docx": disguised})
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
    # Inside another archive (as a document: .zip members are never unpacked), that member
    # is skipped alone: its directory cannot be listed to count what it unpacks to.
    nested = zip_of(tmp_path / "outer.zip", {"inner.odt": upload.read_bytes(), "a.md": "# A\n"})
    contents = expand_zip(nested, tmp_path / "out2")
    assert [m.name for m in contents.members] == ["a.md"]
    assert contents.skipped == [
        (
            "inner.odt",
            "it is itself an archive (a .docx, .xlsx, .odt … is one), and it lists 5,001 "
            "entries (files and folders), more than the limit of 4,000 for an archive inside "
            "another; add it on its own",
        )
    ]
    assert all_files(tmp_path / "out2") == {contents.members[0].path}


def test_a_document_of_many_parts_inside_an_archive_fails_alone(tmp_path: Path) -> None:
    # A real .docx of 4,000 pictures: its reader takes it alone (up to 20,000 entries),
    # but inside a zip it sank the whole archive.
    document = docx.Document()
    document.add_paragraph("The annual report of the harbour.")
    report = tmp_path / "report.docx"
    document.save(str(report))
    with zipfile.ZipFile(report, "a") as package:
        for number in range(4000):
            package.writestr(f"word/media/image{number}.png", b"p")
    assert DocxReader().read(report)[0].text == "The annual report of the harbour."
    upload = zip_of(
        tmp_path / "batch.zip",
        {"first.txt": "first", "report.docx": report.read_bytes(), "last.txt": "last"},
    )
    contents = expand_zip(upload, tmp_path / "out")
    assert [m.name for m in contents.members] == ["first.txt", "last.txt"]
    ((name, reason),) = contents.skipped
    assert name == "report.docx"
    assert "it lists 4,0" in reason and "more than the limit of 4,000" in reason
    assert contents.unpacked_bytes == len("first") + len("last")
    assert all_files(tmp_path / "out") == {m.path for m in contents.members}


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
    assert info.value.reason.endswith("more than the limit of 4 MB")


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
    upload = zip_of(
        tmp_path / "upload.zip", {"notes.md": "# Notes\n", "report.docx": inner.read_bytes()}
    )
    inner.unlink()
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "out")
    assert info.value.reason.startswith(
        "'report.docx' is itself an archive that unpacks to 8 MB, so the archive would "
        "unpack to 8 MB from "
    )
    assert "as a whole, more than the limit of 200 to 1" in info.value.reason
    assert all_files(tmp_path) == {upload}


def test_nested_totals_count_toward_the_total_limit(tmp_path: Path) -> None:
    # Documents compressed 50 to 1 pass any ratio; together they pass the total.
    docs = {}
    for i in range(3):
        path = tmp_path / f"{i}.docx"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
            package.writestr("word/document.xml", os.urandom(20_000).hex())
        docs[f"doc{i}.docx"] = path.read_bytes()
        path.unlink()
    upload = zip_of(tmp_path / "upload.zip", docs)
    contents = expand_zip(upload, tmp_path / "ok", max_total_bytes=200_000)
    assert [m.name for m in contents.members] == ["doc0.docx", "doc1.docx", "doc2.docx"]
    assert contents.unpacked_bytes == sum(len(d) for d in docs.values()) + 3 * 40_000
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "refused", limits=ZipLimits(max_total_bytes=170_000))
    assert info.value.reason.startswith("'doc2.docx' is itself an archive that unpacks to 39.1 KB")
    assert info.value.reason.endswith("more than the limit of 166 KB (a zip bomb?)")
    assert not (tmp_path / "refused").exists()


def test_what_the_upload_has_left_bounds_the_archive(tmp_path: Path) -> None:
    upload = zip_of(tmp_path / "upload.zip", {"a.txt": os.urandom(5_000).hex()})
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "out", room_bytes=4_000)
    assert info.value.reason == (
        "the archive would unpack to 9.8 KB, more than the 3.9 KB left of the upload's budget"
    )
    assert expand_zip(upload, tmp_path / "out", room_bytes=10_000).unpacked_bytes == 10_000


def test_member_count_limit_counts_files_not_folders(tmp_path: Path) -> None:
    folders: dict[str, bytes | str] = {f"dir{i}/": b"" for i in range(4)}
    upload = zip_of(tmp_path / "upload.zip", {**folders, **{f"{i}.txt": "x" for i in range(5)}})
    assert len(expand_zip(upload, tmp_path / "ok", max_members=5).members) == 5
    with pytest.raises(UnreadableFileError) as info:
        expand_zip(upload, tmp_path / "refused", max_members=4)
    assert info.value.reason == "the archive has 5 files, more than the limit of 4"
    assert not (tmp_path / "refused").exists()
