"""What every file reader implements, the errors a reader raises, and its text budget.

Each error carries a short ``reason`` written for the person who uploaded the file (the app
shows it next to the file name), and optionally the ``path`` it is about. Errors survive
pickling unchanged (type, ``reason``, ``path`` and any other attribute), so a file read in a
worker process fails in the caller with the same error.

A :class:`TextBudget` bounds how much page text one file may give: a table or a PDF can
expand far beyond its size on disk (a header repeated on every row, a compressed content
stream), and every later stage (splitting, embedding, storing) pays for each character. A
reader counts its text with a :class:`TextMeter` as it builds it and stops at the limit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ragloom.byte_sizes import size_text
from ragloom.schema import Page

__all__ = [
    "EmptyDocumentError",
    "FileBudgetError",
    "FileReader",
    "LoaderError",
    "TextBudget",
    "TextMeter",
    "UnreadableFileError",
    "UnsupportedFileTypeError",
    "file_size",
    "read_bytes",
    "without_surrogates",
]


def _rebuild_error(cls: type[LoaderError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """Unpickle a :class:`LoaderError` without calling its (subclass-specific) ``__init__``."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class LoaderError(Exception):
    """A file could not be turned into text; ``reason`` says why in a few words."""

    def __init__(self, reason: str, path: Path | None = None) -> None:
        self.reason = reason
        self.path = path
        super().__init__(f"{path.name}: {reason}" if path is not None else reason)

    def __reduce__(self) -> tuple[Any, ...]:
        # Exception's own pickling calls ``cls(*args)``, which fails for subclasses whose
        # __init__ takes other arguments (UnsupportedFileTypeError, plugins' errors).
        return (_rebuild_error, (type(self), self.args, dict(self.__dict__)))


class UnsupportedFileTypeError(LoaderError):
    """No reader handles the file's extension."""

    def __init__(self, extension: str, supported: Iterable[str], path: Path | None = None) -> None:
        self.extension = extension
        self.supported = tuple(sorted(supported))
        shown = f"'{extension}'" if extension else "(no extension)"
        reason = f"unsupported file type {shown}; supported: {', '.join(self.supported)}"
        super().__init__(reason, path)


class EmptyDocumentError(LoaderError):
    """The file holds no text: it is empty, blank, or a PDF without a text layer."""


class UnreadableFileError(LoaderError):
    """The file is damaged, binary, encrypted or otherwise cannot be read as text."""


def read_bytes(path: Path) -> bytes:
    """The bytes of ``path``; refuses a file that cannot be read or is empty."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _cannot_read(path, exc) from exc
    if not data:
        raise EmptyDocumentError("the file is empty", path)
    return data


def file_size(path: Path, *, refuse_empty: bool = True) -> int:
    """The size of ``path`` in bytes, read without opening the file (a reader that parses
    the file itself checks it first); refuses a file that cannot be read, and an empty one
    unless ``refuse_empty`` is false."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise _cannot_read(path, exc) from exc
    if refuse_empty and size == 0:
        raise EmptyDocumentError("the file is empty", path)
    return size


def _cannot_read(path: Path, exc: OSError) -> UnreadableFileError:
    return UnreadableFileError(f"cannot read the file: {exc.strerror or exc}", path)


class FileBudgetError(LoaderError):
    """A file went past a budget of its own: the page text its :class:`TextBudget` allows
    (``limit`` is then the number of characters it was allowed), or, when it is read and
    chunked (:mod:`ragloom.chunking`), its chunks, time or memory (``limit`` 0)."""

    def __init__(self, reason: str, path: Path | None = None, *, limit: int = 0) -> None:
        self.limit = limit
        super().__init__(reason, path)


@dataclass(frozen=True)
class TextBudget:
    """How many characters of page text one file may give.

    A file of ``n`` bytes may give ``min(max_chars, max(min_chars, ratio * n))`` characters
    (:meth:`limit_for`). The defaults let real documents through with a wide margin: plain
    text, HTML and PDF files give at most about one character per byte, and the CSV and
    JSON readers abbreviate long headers and key paths so that even a table of one-digit
    values under long headers stays under 27 times its size. 64 million characters is some
    60,000 chunks, 40 minutes of embedding at 25 chunks/s (docs/performance.md).
    """

    ratio: float = 32.0
    """Characters allowed per byte of the file."""
    max_chars: int = 64_000_000
    """The most any file may give, whatever its size."""
    min_chars: int = 1_000_000
    """What any file may give, however small (so tiny files never trip the ratio)."""

    def __post_init__(self) -> None:
        if not self.ratio > 0 or self.max_chars < 1 or not 0 <= self.min_chars <= self.max_chars:
            raise ValueError(f"invalid text budget: {self}")

    def limit_for(self, file_size: int) -> int:
        """The most characters of page text a file of ``file_size`` bytes may give."""
        return min(self.max_chars, max(self.min_chars, int(self.ratio * max(file_size, 0))))

    def meter(self, file_size: int, kind: str = "file", path: Path | None = None) -> TextMeter:
        """A :class:`TextMeter` for one file; ``kind`` names it in the reason ("CSV file")."""
        return TextMeter(self, file_size, kind, path)

    def reason(self, file_size: int, kind: str = "file") -> str:
        """Why a file of ``file_size`` bytes that went past its limit is refused."""
        limit = self.limit_for(file_size)
        size = size_text(file_size)
        if limit == self.max_chars and limit < self.ratio * file_size:
            return (
                f"the {kind} would expand to more than {limit:,} characters of text from "
                f"{size}; the limit is {limit:,} characters per file"
            )
        if limit == self.min_chars and limit > self.ratio * file_size:
            return (
                f"the {kind} would expand to more than {limit:,} characters of text from "
                f"{size}; the limit is {limit:,} characters for a file this small"
            )
        return (
            f"the {kind} would expand to more than {limit:,} characters of text, over "
            f"{self.ratio:g} times its size ({size}); the limit is {self.ratio:g} times "
            "the file's size"
        )


class TextMeter:
    """Counts the characters a reader produces for one file; raises past the budget.

    Readers call :meth:`add` as they build each line or page, so a file that would expand
    too far is refused as soon as it crosses the limit, before its whole text exists.
    """

    def __init__(
        self, budget: TextBudget, file_size: int, kind: str = "file", path: Path | None = None
    ) -> None:
        self.budget = budget
        self.file_size = file_size
        self.kind = kind
        self.path = path
        self.limit = budget.limit_for(file_size)
        self.used = 0

    def add(self, chars: int) -> None:
        """Count ``chars`` more characters; raises :class:`FileBudgetError` past it."""
        self.used += chars
        if self.used > self.limit:
            raise self.error()

    def error(self) -> FileBudgetError:
        """The error for this file going past its limit."""
        reason = self.budget.reason(self.file_size, self.kind)
        return FileBudgetError(reason, self.path, limit=self.limit)


# Python strings can hold lone surrogates (JSON's "\ud800", some PDF text maps); no encoder
# accepts them, so the tokenizer and the stores would fail on them far from the reader.
_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> str:
    """``text`` with each lone surrogate code point replaced by U+FFFD (same length)."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", text)


@runtime_checkable
class FileReader(Protocol):
    """Reads one kind of file into pages of text.

    ``extensions`` are lower-case with their dot (``".pdf"``). ``read`` returns at least one
    page with text, or raises a :class:`LoaderError`.
    """

    extensions: tuple[str, ...]

    def read(self, path: Path) -> list[Page]:
        """The pages of text in ``path``."""
        ...
