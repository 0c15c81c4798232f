"""read_file: dispatch by extension, the default readers and extra (plugin) readers."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from ragloom.loaders import (
    CsvReader,
    DocxReader,
    FileReader,
    HtmlReader,
    JsonReader,
    LoaderError,
    PdfReader,
    TextReader,
    UnsupportedFileTypeError,
    default_readers,
    read_file,
)
from ragloom.schema import Page
from tests.helpers.pdfs import make_pdf


def test_default_readers() -> None:
    readers = default_readers()
    assert sorted(readers) == [
        ".csv",
        ".docx",
        ".htm",
        ".html",
        ".json",
        ".markdown",
        ".md",
        ".pdf",
        ".txt",
    ]
    assert isinstance(readers[".txt"], TextReader)
    assert isinstance(readers[".pdf"], PdfReader)
    assert isinstance(readers[".htm"], HtmlReader)
    assert isinstance(readers[".docx"], DocxReader)
    assert isinstance(readers[".csv"], CsvReader)
    assert isinstance(readers[".json"], JsonReader)
    assert ".zip" not in readers  # archives are unpacked by expand_zip, not read
    assert all(isinstance(r, FileReader) for r in readers.values())
    readers[".rtf"] = readers[".txt"]
    assert ".rtf" not in default_readers()  # a fresh mapping every time


def test_dispatch_is_case_insensitive(tmp_path: Path) -> None:
    (tmp_path / "A.TXT").write_text("upper case name")
    (tmp_path / "B.PDF").write_bytes(make_pdf(["pdf page"]))
    assert read_file(tmp_path / "A.TXT") == [Page(text="upper case name")]
    assert read_file(tmp_path / "B.PDF") == [Page(text="pdf page", number=1)]


def test_unsupported_extension(tmp_path: Path) -> None:
    path = tmp_path / "sheet.xyz"
    path.write_text("a,b,c")
    with pytest.raises(UnsupportedFileTypeError) as info:
        read_file(path)
    error = info.value
    assert isinstance(error, LoaderError)
    assert error.reason == (
        "unsupported file type '.xyz'; supported: "
        ".csv, .docx, .htm, .html, .json, .markdown, .md, .pdf, .txt"
    )
    assert error.extension == ".xyz"


def test_no_extension(tmp_path: Path) -> None:
    path = tmp_path / "README"
    path.write_text("text")
    with pytest.raises(UnsupportedFileTypeError) as info:
        read_file(path)
    assert info.value.reason.startswith("unsupported file type (no extension); supported:")


class _TsvReader:
    extensions = (".tsv",)

    def read(self, path: Path) -> list[Page]:
        return [Page(text=path.read_text().replace("\t", " | "))]


def test_extra_reader(tmp_path: Path) -> None:
    path = tmp_path / "table.tsv"
    path.write_text("a\tb")
    readers = {**default_readers(), ".tsv": _TsvReader()}
    assert isinstance(readers[".tsv"], FileReader)
    assert read_file(path, readers) == [Page(text="a | b")]
    with pytest.raises(UnsupportedFileTypeError) as info:
        read_file(path)
    assert ".tsv" not in info.value.supported


def test_only_given_readers_are_used(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(UnsupportedFileTypeError) as info:
        read_file(path, {".pdf": PdfReader()})
    assert info.value.reason == "unsupported file type '.txt'; supported: .pdf"


def test_legacy_encodings_through_read_file(tmp_path: Path) -> None:
    chinese = "这是一个中文文档。全文检索必须能找到这些汉字，包括生僻字：龘。"
    (tmp_path / "中文.txt").write_bytes(chinese.encode("gb18030"))
    assert read_file(tmp_path / "中文.txt") == [Page(text=chinese)]

    table = "Produit;Prix;Remarque\r\nCrème brûlée;5,50 €;très sucré\r\nCafé;2,00 €;\r\n"
    (tmp_path / "prix.csv").write_bytes(table.encode("cp1252"))
    assert read_file(tmp_path / "prix.csv") == [
        Page(
            text="Produit: Crème brûlée; Prix: 5,50 €; Remarque: très sucré\n"
            "Produit: Café; Prix: 2,00 €"
        )
    ]


PROSE = "A normal sentence of a normal document and long enough to read as text."


@pytest.mark.parametrize(
    ("name", "content", "text"),
    [
        ("value.json", b'{"title": "hello\\u0000world"}', "title: hello\ufffdworld"),
        ("key.json", b'{"ti\\u0000tle": "hello"}', "ti\ufffdtle: hello"),
        # A text with a byte order mark and few NULs passes the binary check.
        (
            "bom.txt",
            codecs.BOM_UTF16_LE + f"{PROSE}\x00{PROSE}".encode("utf-16-le"),
            f"{PROSE}\ufffd{PROSE}",
        ),
        (
            "bom.csv",
            codecs.BOM_UTF32_BE + f"name,note\na,{PROSE}\x00\n".encode("utf-32-be"),
            f"name: a; note: {PROSE}\ufffd",
        ),
    ],
)
def test_a_nul_becomes_a_replacement_character(
    tmp_path: Path, name: str, content: bytes, text: str
) -> None:
    # PostgreSQL cannot store U+0000; one character for one keeps citation offsets.
    (tmp_path / name).write_bytes(content)
    assert read_file(tmp_path / name) == [Page(text=text)]


def test_a_plugin_readers_nul_is_replaced_too(tmp_path: Path) -> None:
    class NulReader:
        extensions = (".nul",)

        def read(self, path: Path) -> list[Page]:
            return [Page(text="a\x00b\x00", number=3)]

    (tmp_path / "x.nul").write_text("anything")
    assert read_file(tmp_path / "x.nul", {".nul": NulReader()}) == [
        Page(text="a\ufffdb\ufffd", number=3)
    ]
