"""Reading and chunking one file in the readers sandbox: the same chunks, within budgets."""

from __future__ import annotations

import pickle
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ragloom.chunking import (
    FileBudgetError,
    ReaderFailedError,
    chunk_in_sandbox,
    readers_sandbox,
    split_within_budget,
    warm_readers_sandbox,
)
from ragloom.loaders import (
    EmptyDocumentError,
    LoaderError,
    UnsupportedFileTypeError,
    default_readers,
)
from ragloom.sandbox import Sandbox, SandboxLimits
from ragloom.schema import Page
from ragloom.splitters import TokenSplitter, approximate_token_count

PROSE = (
    "The harbour pumps move seawater uphill at night. They were installed in 1999. "
    "Each pump is serviced every spring by the quay crew, who log the hours run. "
)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox("indexing-test", SandboxLimits(workers=1))
    yield box
    box.close()


def _splitter(**changes: object) -> TokenSplitter:
    return TokenSplitter(chunk_size=32, chunk_overlap=4, **changes)


def _pages() -> list[Page]:
    return [Page(PROSE * (n + 1), number=n + 1) for n in range(6)] + [Page("  \n ", number=7)]


def test_page_by_page_chunks_are_those_of_the_whole_file() -> None:
    splitter = _splitter()
    whole = splitter(_pages(), source_id="src", source_name="a.pdf")
    assert split_within_budget(_pages(), splitter, "src", "a.pdf", 10_000) == whole
    assert [c.id for c in whole] == [f"src-{i:05d}" for i in range(len(whole))]


def test_the_chunk_budget_stops_splitting_early() -> None:
    with pytest.raises(FileBudgetError) as info:
        split_within_budget(_pages(), _splitter(), "src", "a.pdf", 5)
    assert info.value.reason == "the file makes more than 5 chunks, the limit per file"


def test_millions_of_pages_are_refused_before_any_is_split() -> None:
    def never(text: str) -> int:
        raise AssertionError("no page may be split")

    pages = [Page("a line of text")] * 5_000_000
    with pytest.raises(FileBudgetError, match="more than 1,000 chunks, what is left"):
        split_within_budget(pages, _splitter(tokenizer=never), "s", "n", 1000, "what is left")


def test_a_file_is_chunked_in_a_worker(tmp_path: Path, sandbox: Sandbox) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("\n\n".join(page.text for page in _pages()[:3]))
    splitter = _splitter(tokenizer=approximate_token_count)
    expected = splitter(default_readers()[".txt"].read(path), source_id="s", source_name="n")
    chunks = chunk_in_sandbox(path, default_readers(), splitter, "s", "n", sandbox=sandbox)
    assert chunks == expected


def test_a_counter_that_cannot_cross_chunks_here_with_the_same_result(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    path = tmp_path / "notes.md"
    path.write_text(PROSE * 4)

    def local_counter(text: str) -> int:  # a local function does not pickle
        return approximate_token_count(text)

    here = chunk_in_sandbox(
        path, default_readers(), _splitter(tokenizer=local_counter), "s", "n", sandbox=sandbox
    )
    there = chunk_in_sandbox(
        path,
        default_readers(),
        _splitter(tokenizer=approximate_token_count),
        "s",
        "n",
        sandbox=sandbox,
    )
    assert here == there and len(here) > 1
    with pytest.raises(FileBudgetError, match="more than 1 chunks"):
        chunk_in_sandbox(
            path,
            default_readers(),
            _splitter(tokenizer=local_counter),
            "s",
            "n",
            max_chunks=1,
            sandbox=sandbox,
        )


def test_a_readers_own_error_comes_back_with_its_class_and_reason(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(EmptyDocumentError) as info:
        chunk_in_sandbox(empty, default_readers(), _splitter(), "s", "n", sandbox=sandbox)
    assert info.value.reason == "the file is empty"
    with pytest.raises(UnsupportedFileTypeError, match=r"unsupported file type '\.xyz'"):
        chunk_in_sandbox(tmp_path / "a.xyz", default_readers(), _splitter(), "s", "n")


def test_a_reader_that_cannot_be_loaded_in_the_worker_is_named(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    class Local:
        extensions = (".loc",)

        def read(self, path: Path) -> list[Page]:
            return [Page("never")]

    (tmp_path / "a.loc").write_text("x")
    with pytest.raises(ReaderFailedError, match=r"the reader Local for '\.loc' files cannot run"):
        chunk_in_sandbox(tmp_path / "a.loc", {".loc": Local()}, _splitter(), "s", "n")


@pytest.mark.parametrize(
    "error",
    [
        LoaderError("plain"),
        EmptyDocumentError("the file is empty", Path("/x/a.txt")),
        UnsupportedFileTypeError(".xyz", [".txt", ".md"], Path("a.xyz")),
        FileBudgetError("the file makes more than 5 chunks, the limit per file"),
    ],
)
def test_loader_errors_pickle_with_their_reason(error: LoaderError) -> None:
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error)
    assert (again.reason, again.path, str(again)) == (error.reason, error.path, str(error))


def imported(module: str) -> bool:
    return module in sys.modules


def test_warming_imports_what_reading_needs_in_every_worker() -> None:
    assert warm_readers_sandbox()
    box = readers_sandbox()
    with ThreadPoolExecutor(box.limits.workers) as pool:
        calls = [
            pool.submit(box.run, imported, "tokenizers", timeout=30)
            for _ in range(box.limits.workers)
        ]
        assert [call.result() for call in calls] == [True] * box.limits.workers


class ValueErrorReader:
    """A plugin reader that fails with an error of its own kind."""

    extensions = (".bad",)

    def read(self, path: Path) -> list[Page]:
        raise ValueError("unexpected byte at offset 12")


def test_a_readers_own_error_fails_the_file_with_it(sandbox: Sandbox, tmp_path: Path) -> None:
    path = tmp_path / "notes.bad"
    path.write_text("whatever")
    with pytest.raises(ReaderFailedError) as info:
        chunk_in_sandbox(
            path, {".bad": ValueErrorReader()}, _splitter(), "s", "notes.bad", sandbox=sandbox
        )
    assert info.value.reason == (
        "the reader ValueErrorReader failed: ValueError: unexpected byte at offset 12"
    )


def test_the_splitters_character_cap_holds_in_the_worker(sandbox: Sandbox, tmp_path: Path) -> None:
    path = tmp_path / "word.txt"
    path.write_text("a" * 5000)  # one "word": the approximate count calls it one token
    splitter = _splitter(max_chars_per_token=10)
    chunks = chunk_in_sandbox(path, default_readers(), splitter, "s", "word.txt", sandbox=sandbox)
    assert max(len(c.text) for c in chunks) == 32 * 10
    assert chunks == splitter(
        [Page("a" * 5000, number=None)], source_id="s", source_name="word.txt"
    )
