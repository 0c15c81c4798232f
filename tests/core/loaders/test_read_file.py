"""read_file: dispatch by extension, the default readers and extra (plugin) readers."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.loaders import (
    FileReader,
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
    assert set(readers) == {".txt", ".md", ".markdown", ".pdf"}
    assert isinstance(readers[".txt"], TextReader)
    assert isinstance(readers[".pdf"], PdfReader)
    assert all(isinstance(r, FileReader) for r in readers.values())
    readers[".html"] = readers[".txt"]
    assert ".html" not in default_readers()  # a fresh mapping every time


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
    assert error.reason == "unsupported file type '.xyz'; supported: .markdown, .md, .pdf, .txt"
    assert error.extension == ".xyz"


def test_no_extension(tmp_path: Path) -> None:
    path = tmp_path / "README"
    path.write_text("text")
    with pytest.raises(UnsupportedFileTypeError) as info:
        read_file(path)
    assert info.value.reason.startswith("unsupported file type (no extension); supported:")


class _CsvReader:
    extensions = (".csv",)

    def read(self, path: Path) -> list[Page]:
        return [Page(text=path.read_text().replace(",", " | "))]


def test_extra_reader(tmp_path: Path) -> None:
    path = tmp_path / "table.csv"
    path.write_text("a,b")
    readers = {**default_readers(), ".csv": _CsvReader()}
    assert isinstance(readers[".csv"], FileReader)
    assert read_file(path, readers) == [Page(text="a | b")]
    with pytest.raises(UnsupportedFileTypeError) as info:
        read_file(path)
    assert ".csv" not in info.value.supported


def test_only_given_readers_are_used(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(UnsupportedFileTypeError) as info:
        read_file(path, {".pdf": PdfReader()})
    assert info.value.reason == "unsupported file type '.txt'; supported: .pdf"
