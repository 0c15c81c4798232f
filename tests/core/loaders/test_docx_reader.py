"""DocxReader on documents built here with python-docx, and on files that are not .docx."""

from __future__ import annotations

import zipfile
from dataclasses import replace
from pathlib import Path

import docx
import pytest
from docx.enum.text import WD_BREAK

import ragloom.loaders.docx as docx_loader
from ragloom.loaders import (
    DocxReader,
    EmptyDocumentError,
    FileBudgetError,
    TextBudget,
    UnreadableFileError,
)
from ragloom.schema import Page
from tests.helpers.zip_bombs import docx_bomb, zip_of_repeats


def _save(document: docx.document.Document, tmp_path: Path, name: str = "doc.docx") -> Path:
    path = tmp_path / name
    document.save(str(path))
    return path


def test_paragraphs_headings_and_tables_in_document_order(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_heading("Annual report", level=1)
    document.add_paragraph("Revenue grew   by 12% in 2025.")
    document.add_paragraph("")  # empty paragraphs are left out
    document.add_heading("Staff", level=2)
    table = document.add_table(rows=3, cols=3)
    header, first = table.rows[0], table.rows[1]
    for row, values in ((header, ("Name", "Role", "Since")), (first, ("Ann", "CEO", "2019"))):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    # The third row is left empty and must not produce a line.
    document.add_paragraph("Written after the table.")
    text = DocxReader().read(_save(document, tmp_path))[0].text
    assert text == (
        "Annual report\n\n"
        "Revenue grew by 12% in 2025.\n\n"
        "Staff\n\n"
        "Name | Role | Since\n"
        "Ann | CEO | 2019\n\n"
        "Written after the table."
    )


def test_merged_cells_are_written_once(tmp_path: Path) -> None:
    document = docx.Document()
    table = document.add_table(rows=2, cols=3)
    merged = table.cell(0, 0).merge(table.cell(0, 1))
    merged.text = "Wide heading"
    table.cell(0, 2).text = "Right"
    for cell, value in zip(table.rows[1].cells, ("a", "b", "c"), strict=True):
        cell.text = value
    text = DocxReader().read(_save(document, tmp_path))[0].text
    assert text == "Wide heading | Right\na | b | c"


def test_cell_paragraphs_and_nested_tables_stay_on_the_row(tmp_path: Path) -> None:
    document = docx.Document()
    table = document.add_table(rows=1, cols=2)
    outer = table.cell(0, 0)
    outer.text = "First line"
    outer.add_paragraph("second line")
    inner = table.cell(0, 1).add_table(rows=1, cols=2)
    inner.cell(0, 0).text = "inner A"
    inner.cell(0, 1).text = "inner B"
    text = DocxReader().read(_save(document, tmp_path))[0].text
    assert text == "First line second line | inner A inner B"


def test_line_breaks_inside_a_paragraph(tmp_path: Path) -> None:
    document = docx.Document()
    run = document.add_paragraph().add_run("Street 1")
    run.add_break(WD_BREAK.LINE)
    run.add_text("Town")
    document.add_paragraph("中文段落，包含标点。")
    assert DocxReader().read(_save(document, tmp_path)) == [
        Page(text="Street 1\nTown\n\n中文段落，包含标点。", number=None)
    ]


def test_document_without_text(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("   ")
    document.add_table(rows=2, cols=2)
    path = _save(document, tmp_path, "blank.docx")
    with pytest.raises(EmptyDocumentError) as info:
        DocxReader().read(path)
    assert info.value.reason == "no text found in the document"
    assert info.value.path == path


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.docx"
    path.write_bytes(b"")
    with pytest.raises(EmptyDocumentError) as info:
        DocxReader().read(path)
    assert info.value.reason == "the file is empty"


def test_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "old.docx"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600)  # a Word 97 .doc
    with pytest.raises(UnreadableFileError) as info:
        DocxReader().read(path)
    assert info.value.reason == "not a valid .docx file: File is not a zip file"


def test_zip_that_is_not_a_document(tmp_path: Path) -> None:
    path = tmp_path / "fake.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "just a zip")
    with pytest.raises(UnreadableFileError) as info:
        DocxReader().read(path)
    assert info.value.reason == (
        "not a valid .docx file: There is no item named '[Content_Types].xml' in the archive"
    )


def test_truncated_document(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Some text " * 200)
    data = _save(document, tmp_path).read_bytes()
    path = tmp_path / "cut.docx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(UnreadableFileError) as info:
        DocxReader().read(path)
    assert info.value.reason.startswith("not a valid .docx file: ")


def test_document_that_would_unpack_too_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = docx.Document()
    document.add_paragraph("Harmless text")
    path = _save(document, tmp_path)
    # A real one would need 512 MB; lower the limit instead.
    limits = replace(docx_loader.DOCX_LIMITS, max_total_bytes=1000)
    monkeypatch.setattr(docx_loader, "DOCX_LIMITS", limits)
    with pytest.raises(UnreadableFileError) as info:
        DocxReader().read(path)
    assert info.value.reason.startswith("the document would unpack to ")
    assert info.value.reason.endswith("more than the limit of 1000 bytes (a zip bomb?)")


def test_a_docx_bomb_is_refused_before_python_docx_parses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 64 MB of XML in about 70 KB: python-docx would inflate all of it into memory.
    bomb = docx_bomb(tmp_path / "bomb.docx", 64 << 20)
    assert bomb.stat().st_size < 100_000

    def parse(*args: object) -> None:
        raise AssertionError("python-docx must not see a docx bomb")

    monkeypatch.setattr(docx_loader.docx, "Document", parse)
    with pytest.raises(UnreadableFileError) as info:
        DocxReader().read(bomb)
    assert info.value.reason.startswith("'word/document.xml' is compressed ")
    assert info.value.reason.endswith("to 1, more than the limit of 200 to 1 (a zip bomb?)")


def test_many_small_parts_are_judged_as_a_whole(tmp_path: Path) -> None:
    # Each part is under the 1 MiB under which a part's own ratio is not judged.
    parts = {f"word/part{i}.xml": (1 << 20) - 1 for i in range(8)}
    bomb = zip_of_repeats(tmp_path / "parts.docx", parts)
    with pytest.raises(UnreadableFileError) as info:
        DocxReader().read(bomb)
    assert info.value.reason.startswith("the document would unpack to 8 MB from ")
    assert "to 1 as a whole, more than the limit of 200 to 1" in info.value.reason


def test_text_past_the_budget_is_refused_as_it_is_read(tmp_path: Path) -> None:
    document = docx.Document()
    for number in range(50):
        document.add_paragraph(f"Paragraph {number} of the long report. " * 20)
    path = tmp_path / "long.docx"
    document.save(str(path))
    budget = TextBudget(ratio=0.5, min_chars=10, max_chars=10_000)
    with pytest.raises(FileBudgetError, match="the Word file would expand to more than"):
        DocxReader(budget).read(path)
    assert DocxReader().read(path)[0].text.count("Paragraph") == 50 * 20
