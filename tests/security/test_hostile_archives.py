"""Zip bombs in an upload: refused before they unpack, the rest of the upload indexed.

- Many members just under the size where a member's own ratio is judged: the archive's
  ratio as a whole refuses them.
- An Office document inside a zip: it is a zip too, so what it unpacks to counts toward
  the archive's limits; one with too many parts to list fails alone.
- A docx bomb uploaded alone: DocxReader checks the package before python-docx inflates it.
- One upload's budget of bytes and chunks: past it, files fail with the reason and what
  was indexed stays indexed.
"""

from __future__ import annotations

import time
import zipfile
from pathlib import Path

import pytest

from ragloom_app.index.base import FileOutcome
from ragloom_app.index.file import FileIndex
from tests.helpers.file_index import hash_file_index
from tests.helpers.heartbeat import Heartbeat
from tests.helpers.zip_bombs import docx_bomb, zip_of_repeats

pytestmark = pytest.mark.security

NOTES = "# Notes\n\nThe harbour pumps move seawater uphill at night.\n"


@pytest.fixture
def index(tmp_path: Path) -> FileIndex:
    return hash_file_index(tmp_path / "data")


def _files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _index_timed(index: FileIndex, paths: list[Path]) -> tuple[dict[str, FileOutcome], float]:
    """The outcomes of one upload, and the longest pause of a heartbeat meanwhile that
    Python threads held (wall time also counts the OS keeping the process off a core:
    1.16 s was seen in one CI run of an otherwise idle machine; see tests/helpers/heartbeat.py)."""
    with Heartbeat() as beat:
        outcomes = {o.name: o for o in index.get_indexing_pipeline({}).run(paths)}
    return outcomes, beat.longest_held_pause


def _assert_nothing_left(index: FileIndex) -> None:
    data = index.resources.data_dir
    assert _files_under(data / "tmp") == []
    assert index.check().clean


def test_members_just_under_the_ratio_floor_are_refused_as_a_whole(
    index: FileIndex, tmp_path: Path
) -> None:
    # 300 members of 1 MiB less a byte: each passes alone; together 300 MB from 480 KB.
    members = {f"part{i:03d}.md": (1 << 20) - 1 for i in range(300)}
    bomb = zip_of_repeats(tmp_path / "bomb.zip", members)
    notes = tmp_path / "notes.md"
    notes.write_text(NOTES)
    assert bomb.stat().st_size < 1 << 20
    started = time.perf_counter()
    outcomes, pause = _index_timed(index, [bomb, notes])
    refused_in = time.perf_counter() - started
    assert outcomes["bomb.zip"].status == "failed"
    assert outcomes["bomb.zip"].reason.startswith("the archive would unpack to 300 MB from ")
    assert outcomes["bomb.zip"].reason.endswith(
        "to 1 as a whole, more than the limit of 200 to 1 (a zip bomb?)"
    )
    assert outcomes["notes.md"].status == "indexed"
    assert [s["name"] for s in index.list_sources()] == ["notes.md"]
    assert pause < 0.5
    _assert_nothing_left(index)
    print(f"\nflat bomb: refused with the next file indexed in {refused_in:.2f} s")


def test_an_office_document_inside_a_zip_counts_as_a_nested_archive(
    index: FileIndex, tmp_path: Path
) -> None:
    # The .docx is a zip of its own: 300 MB of XML in about 300 KB, which the outer
    # archive stores as it is (its own ratio is about 1).
    report = docx_bomb(tmp_path / "report.docx", 300 << 20)
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("notes.md", NOTES)
        bundle.write(report, "reports/report.docx")
    notes = tmp_path / "after.md"
    notes.write_text(NOTES + "\nIndexed after the bundle.\n")
    outcomes, pause = _index_timed(index, [archive, notes])
    assert outcomes["bundle.zip"].status == "failed"
    assert outcomes["bundle.zip"].reason.startswith(
        "'reports/report.docx' is itself an archive that unpacks to 300 MB, so the archive "
        "would unpack to 300."
    )
    assert (
        "as a whole, more than the limit of 200 to 1 (a zip bomb?)" in outcomes["bundle.zip"].reason
    )
    assert outcomes["after.md"].status == "indexed"
    assert pause < 0.5
    _assert_nothing_left(index)


def test_a_document_of_many_parts_inside_a_zip_fails_alone(
    index: FileIndex, tmp_path: Path
) -> None:
    # A .docx of 4,001 parts (its reader takes up to 20,000): too many to list when it is
    # counted as a nested archive, so it fails, and the archive's other members go on.
    report = tmp_path / "report.docx"
    with zipfile.ZipFile(report, "w") as package:
        package.writestr("word/document.xml", "<x/>")
        for number in range(4000):
            package.writestr(f"word/media/image{number}.png", b"p")
    archive = tmp_path / "batch.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as batch:
        batch.writestr("first.md", NOTES)
        batch.write(report, "report.docx")
        batch.writestr("last.md", NOTES + "\nThe last file of the batch.\n")
    outcomes, _ = _index_timed(index, [archive])
    assert {name: o.status for name, o in outcomes.items()} == {
        "batch.zip/first.md": "indexed",
        "batch.zip/report.docx": "failed",
        "batch.zip/last.md": "indexed",
    }
    assert "it lists 4,001 entries (files and folders), more than the limit of 4,000" in (
        outcomes["batch.zip/report.docx"].reason
    )
    _assert_nothing_left(index)


def test_a_docx_bomb_fails_alone(index: FileIndex, tmp_path: Path) -> None:
    bomb = docx_bomb(tmp_path / "bomb.docx", 300 << 20)
    notes = tmp_path / "notes.md"
    notes.write_text(NOTES)
    started = time.perf_counter()
    outcomes, pause = _index_timed(index, [bomb, notes])
    refused_in = time.perf_counter() - started
    assert outcomes["bomb.docx"].status == "failed"
    assert outcomes["bomb.docx"].reason.startswith("'word/document.xml' is compressed ")
    assert outcomes["bomb.docx"].reason.endswith(
        "to 1, more than the limit of 200 to 1 (a zip bomb?)"
    )
    assert outcomes["notes.md"].status == "indexed"
    assert pause < 0.5
    _assert_nothing_left(index)
    print(f"\ndocx bomb: refused with the next file indexed in {refused_in:.2f} s")


def test_an_uploads_budget_of_bytes_and_chunks(tmp_path: Path) -> None:
    index = hash_file_index(tmp_path / "data", max_upload_bytes=12_000, max_upload_chunks=5)
    upload = tmp_path / "upload"
    upload.mkdir()

    def write(name: str, paragraphs: int) -> Path:
        path = upload / name
        words = f"{Path(name).stem} pump " * 100
        path.write_text("\n\n".join(f"Paragraph {i}. {words}" for i in range(paragraphs)))
        return path

    first = write("first.md", 2)  # 2 chunks of 202 words, 2.3 KB
    big = write("big.md", 4)  # 4 chunks: more than the 3 left (its bytes are spent)
    second = write("second.md", 2)  # fits in what is left
    archive = upload / "bundle.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("inside.md", "pump " * 2000)  # 10 KB unpacked: more than is left
    third = write("third.md", 1)  # the last chunk of the budget
    fourth = write("fourth.md", 1)
    outcomes = {
        o.name: o
        for o in index.get_indexing_pipeline({}).run([first, big, second, archive, third, fourth])
    }
    assert outcomes["first.md"].status == "indexed" and outcomes["first.md"].chunks == 2
    assert outcomes["big.md"].status == "failed"
    assert outcomes["big.md"].reason == (
        "the file makes more than 3 chunks, what is left of the upload's budget of 5 chunks"
    )
    assert outcomes["second.md"].status == "indexed"
    assert outcomes["bundle.zip"].status == "failed"
    assert outcomes["bundle.zip"].reason.startswith(
        "the archive would unpack to 9.8 KB, more than the "
    )
    assert outcomes["bundle.zip"].reason.endswith(" left of the upload's budget")
    assert outcomes["third.md"].status == "indexed"
    assert outcomes["fourth.md"].status == "failed"
    assert outcomes["fourth.md"].reason == (
        "the upload's budget of 5 chunks is used up; add this file in another upload"
    )
    listed = {s["name"]: s["status"] for s in index.list_sources()}
    assert listed == {
        "first.md": "indexed",
        "big.md": "failed",
        "second.md": "indexed",
        "third.md": "indexed",
    }
    assert index.check().clean
    # A new upload has a budget of its own; past its bytes, a file fails saying so.
    again, wide = index.get_indexing_pipeline({}).run([fourth, write("wide.md", 13)])
    assert again.status == "indexed"
    assert wide.status == "failed"
    assert wide.reason.startswith(
        "the upload's budget of 11.7 KB (its files and what its archives unpack to) has "
    )
    assert wide.reason.endswith(" of this file; add it in another upload")
    assert index.check().clean
