"""TextBudget and TextMeter, errors that survive pickling, and read_file's checks of any reader."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from ragloom.loaders import (
    CsvReader,
    EmptyDocumentError,
    FileBudgetError,
    HtmlReader,
    JsonReader,
    LoaderError,
    PdfReader,
    TextBudget,
    TextReader,
    UnreadableFileError,
    UnsupportedFileTypeError,
    default_readers,
    read_file,
    without_surrogates,
)
from ragloom.schema import Page


def test_limit_is_relative_with_a_floor_and_a_ceiling() -> None:
    budget = TextBudget(ratio=10, max_chars=5_000, min_chars=100)
    assert budget.limit_for(0) == 100
    assert budget.limit_for(5) == 100  # tiny files get the floor
    assert budget.limit_for(123) == 1_230
    assert budget.limit_for(10_000) == 5_000  # large files the ceiling
    assert TextBudget().limit_for(2_000_000) == 64_000_000
    assert TextBudget().limit_for(100_000) == 3_200_000
    assert TextBudget().limit_for(10) == 1_000_000


@pytest.mark.parametrize(
    "changes",
    [{"ratio": 0}, {"max_chars": 0}, {"min_chars": -1}, {"min_chars": 10, "max_chars": 5}],
)
def test_invalid_budgets(changes: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="invalid text budget"):
        TextBudget(**changes)


def test_reasons_name_the_limit_that_applies() -> None:
    budget = TextBudget()
    assert budget.reason(5_000_000, "CSV file") == (
        "the CSV file would expand to more than 64,000,000 characters of text from 4.8 MB; "
        "the limit is 64,000,000 characters per file"
    )
    assert budget.reason(100_000, "PDF file") == (
        "the PDF file would expand to more than 3,200,000 characters of text, over 32 times "
        "its size (97.7 KB); the limit is 32 times the file's size"
    )
    assert budget.reason(2_000, "JSON file") == (
        "the JSON file would expand to more than 1,000,000 characters of text from 2 KB; "
        "the limit is 1,000,000 characters for a file this small"
    )


def test_meter_raises_once_past_the_limit(tmp_path: Path) -> None:
    meter = TextBudget(ratio=1, max_chars=10, min_chars=0).meter(10, "text file", tmp_path / "a")
    meter.add(6)
    meter.add(4)  # exactly at the limit is allowed
    with pytest.raises(FileBudgetError) as info:
        meter.add(1)
    assert info.value.limit == 10
    assert info.value.path == tmp_path / "a"
    assert info.value.reason.startswith("the text file would expand to more than 10 characters")


class PluginError(LoaderError):
    """A plugin's error whose __init__ does not take a reason first."""

    def __init__(self, code: int, path: Path | None = None) -> None:
        self.code = code
        super().__init__(f"plugin code {code}", path)


@pytest.mark.parametrize(
    "error",
    [
        LoaderError("plain reason"),
        LoaderError("with a path", Path("/tmp/a.txt")),
        EmptyDocumentError("the file is empty", Path("e.txt")),
        UnreadableFileError("binary content, not text", Path("b.txt")),
        UnsupportedFileTypeError(".xyz", [".txt", ".pdf"], Path("s.xyz")),
        UnsupportedFileTypeError("", [".txt"]),
        FileBudgetError("too much text", Path("big.csv"), limit=42),
        PluginError(7, Path("p.rtf")),
    ],
    ids=lambda e: type(e).__name__,
)
def test_errors_survive_pickling(error: LoaderError) -> None:
    error.add_note("a note")
    copy = pickle.loads(pickle.dumps(error, protocol=pickle.HIGHEST_PROTOCOL))
    assert type(copy) is type(error)
    assert (copy.reason, copy.path, copy.args, str(copy)) == (
        error.reason,
        error.path,
        error.args,
        str(error),
    )
    assert vars(copy) == vars(error)
    if isinstance(error, UnsupportedFileTypeError):
        assert (copy.extension, copy.supported) == (error.extension, error.supported)


def test_without_surrogates() -> None:
    assert without_surrogates("plain café 中文") == "plain café 中文"
    assert without_surrogates("a\ud800b\udfff") == "a\ufffdb\ufffd"


class _ChattyReader:
    """A plugin reader that expands its file a thousand times and leaves a lone surrogate."""

    extensions = (".chat",)

    def read(self, path: Path) -> list[Page]:
        text = path.read_text()
        return [Page(text=text * 1_000, number=1), Page(text="x\ud83d", number=2)]


def test_read_file_checks_what_any_reader_returns(tmp_path: Path) -> None:
    path = tmp_path / "notes.chat"
    path.write_text("0123456789")
    readers = {".chat": _ChattyReader()}
    pages = read_file(path, readers)
    assert [p.text for p in pages] == ["0123456789" * 1_000, "x\ufffd"]
    with pytest.raises(FileBudgetError) as info:
        read_file(path, readers, TextBudget(ratio=100, min_chars=0))
    assert info.value.reason == (
        "the .chat file would expand to more than 1,000 characters of text, over 100 times "
        "its size (10 bytes); the limit is 100 times the file's size"
    )
    assert info.value.path == path


def test_default_readers_share_the_budget_given(tmp_path: Path) -> None:
    budget = TextBudget(max_chars=5, min_chars=5)
    readers = default_readers(budget)
    for kind in (TextReader, PdfReader, HtmlReader, CsvReader, JsonReader):
        reader = next(r for r in readers.values() if isinstance(r, kind))
        assert reader.budget is budget
    assert all(r.budget == TextBudget() for r in (TextReader(), CsvReader(), JsonReader()))
    path = tmp_path / "six.txt"
    path.write_text("sixsix")
    with pytest.raises(FileBudgetError, match="the text file would expand"):
        read_file(path, budget=budget)
    assert read_file(path) == [Page("sixsix")]
