"""PdfReader on real PDFs built in the test (tests.helpers.pdfs), good and bad."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pypdf
import pytest

from ragloom.loaders import (
    EmptyDocumentError,
    FileBudgetError,
    PdfReader,
    TextBudget,
    UnreadableFileError,
)
from ragloom.schema import Page
from tests.helpers.pdfs import encrypt_pdf, make_form_pdf, make_pdf


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_two_pages_of_text(tmp_path: Path) -> None:
    path = _write(tmp_path, "two.pdf", make_pdf(["Hello page one", "Hello page two"]))
    assert PdfReader().read(path) == [
        Page(text="Hello page one", number=1),
        Page(text="Hello page two", number=2),
    ]


def test_lines_and_special_characters(tmp_path: Path) -> None:
    path = _write(tmp_path, "lines.pdf", make_pdf(["First line (a)\nSecond line \\ end"]))
    assert PdfReader().read(path)[0].text == "First line (a)\nSecond line \\ end"


def test_pages_without_text_are_skipped_and_numbers_kept(tmp_path: Path) -> None:
    path = _write(tmp_path, "mixed.pdf", make_pdf([None, "Only page two has text", None]))
    assert PdfReader().read(path) == [Page(text="Only page two has text", number=2)]


def test_no_text_layer(tmp_path: Path) -> None:
    path = _write(tmp_path, "scan.pdf", make_pdf([None, None]))
    with pytest.raises(EmptyDocumentError) as info:
        PdfReader().read(path)
    assert info.value.reason == "no text found (a scanned PDF without a text layer?)"


def test_zero_bytes(tmp_path: Path) -> None:
    path = _write(tmp_path, "empty.pdf", b"")
    with pytest.raises(EmptyDocumentError) as info:
        PdfReader().read(path)
    assert info.value.reason == "the file is empty"


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"this is not a PDF at all " * 20, id="garbage"),
        pytest.param(make_pdf(["Hello page one", "Hello page two"])[:300], id="truncated"),
        pytest.param(b"%PDF-1.4\n" + bytes(range(256)) * 4, id="header-then-garbage"),
        pytest.param(make_pdf(["Hello"]).replace(b"startxref", b"startxyz"), id="no-startxref"),
    ],
)
def test_corrupt_pdf(tmp_path: Path, data: bytes) -> None:
    path = _write(tmp_path, "broken.pdf", data)
    with pytest.raises(UnreadableFileError) as info:
        PdfReader().read(path)
    assert info.value.reason.startswith("not a valid PDF: ")
    assert len(info.value.reason) > len("not a valid PDF: ")


def test_encrypted_with_a_password(tmp_path: Path) -> None:
    data = encrypt_pdf(make_pdf(["Secret text"]), user_password="s3cret")
    path = _write(tmp_path, "locked.pdf", data)
    with pytest.raises(UnreadableFileError) as info:
        PdfReader().read(path)
    assert info.value.reason.startswith("encrypted PDF")


def test_encrypted_with_an_empty_user_password_is_read(tmp_path: Path) -> None:
    data = encrypt_pdf(make_pdf(["Readable text"]), user_password="", owner_password="owner")
    path = _write(tmp_path, "restricted.pdf", data)
    assert PdfReader().read(path) == [Page(text="Readable text", number=1)]


class _Recorder(logging.Handler):
    """Records what reaches the root logger's handlers (what a user would see)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def root_records() -> Iterator[list[logging.LogRecord]]:
    # Not caplog: pytest attaches its capture handler to non-propagating loggers too, so it
    # would see records that never reach the root handlers of a real app.
    recorder = _Recorder()
    ours = logging.getLogger("ragloom.loaders.pdf")
    level = ours.level
    ours.setLevel(logging.DEBUG)
    logging.getLogger().addHandler(recorder)
    try:
        yield recorder.records
    finally:
        logging.getLogger().removeHandler(recorder)
        ours.setLevel(level)


def _bad_xref_pdf() -> bytes:
    """A PDF whose startxref points 7 bytes off: pypdf repairs it and logs warnings."""
    data = make_pdf(["Repaired"])
    start = data.rindex(b"startxref\n") + len(b"startxref\n")
    end = data.index(b"\n", start)
    return data[:start] + b"%d" % (int(data[start:end]) + 7) + data[end:]


def test_pypdf_warnings_go_to_debug(tmp_path: Path, root_records: list[logging.LogRecord]) -> None:
    path = _write(tmp_path, "odd.pdf", _bad_xref_pdf())
    assert PdfReader().read(path) == [Page(text="Repaired", number=1)]
    assert not [r for r in root_records if r.name.startswith("pypdf")]
    debug = [r.getMessage() for r in root_records if r.levelno == logging.DEBUG]
    assert any(m.startswith("odd.pdf: pypdf: ") for m in debug)
    assert not [r for r in root_records if r.levelno >= logging.WARNING]


def test_pypdf_records_outside_a_read_pass_through(
    tmp_path: Path, root_records: list[logging.LogRecord]
) -> None:
    PdfReader().read(_write(tmp_path, "one.pdf", make_pdf(["x"])))  # installs the router
    logging.getLogger("pypdf._reader").warning("someone else's pypdf use")
    assert [r.getMessage() for r in root_records if r.name == "pypdf._reader"] == [
        "someone else's pypdf use"
    ]


def test_a_form_drawn_a_few_times_is_read(tmp_path: Path) -> None:
    path = _write(tmp_path, "form.pdf", make_form_pdf("Hello form", draws=3, pages=2))
    assert PdfReader().read(path) == [
        Page(text="Hello form\nHello form\nHello form", number=1),
        Page(text="Hello form\nHello form\nHello form", number=2),
    ]


def test_a_small_form_drawn_thousands_of_times_is_refused(tmp_path: Path) -> None:
    # 906 bytes that pypdf alone would extract to 2,000 x 1,000 characters: refused at the
    # budget's floor, while the page is extracted.
    path = _write(tmp_path, "bomb.pdf", make_form_pdf("a" * 1_000, draws=2_000))
    with pytest.raises(FileBudgetError) as info:
        PdfReader().read(path)
    assert info.value.reason == (
        "the PDF file would expand to more than 1,000,000 characters of text from 906 bytes; "
        "the limit is 1,000,000 characters for a file this small"
    )


def test_the_budget_counts_over_all_pages(tmp_path: Path) -> None:
    path = _write(tmp_path, "three.pdf", make_pdf(["x" * 100, "y" * 100, "z" * 100]))
    budget = TextBudget(max_chars=250, min_chars=250)
    with pytest.raises(FileBudgetError, match="more than 250 characters"):
        PdfReader(budget).read(path)
    assert len(PdfReader(TextBudget(max_chars=300, min_chars=300)).read(path)) == 3


def test_only_pages_that_can_show_text_are_extracted_with_the_counting_visitor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A visitor makes pypdf parse every content stream: 80 times slower on a chart page.
    visited: list[bool] = []
    extract = pypdf.PageObject.extract_text

    def spy(page: pypdf.PageObject, *args: object, **kwargs: object) -> str:
        visited.append(kwargs.get("visitor_text") is not None)
        return extract(page, *args, **kwargs)

    monkeypatch.setattr(pypdf.PageObject, "extract_text", spy)
    path = _write(tmp_path, "chart.pdf", make_pdf([None, "Caption"]))
    assert PdfReader().read(path) == [Page(text="Caption", number=2)]
    assert visited == [False, True]
