"""Reading uploaded files into pages of text.

:func:`read_file` picks a reader by the file's lower-case extension. The app can add
readers (plugins) by passing its own mapping, usually built from :func:`default_readers`::

    readers = {**default_readers(), ".rtf": RtfReader()}
    pages = read_file(path, readers)

Zip archives are not read but unpacked, with :func:`expand_zip`; each member is then read
like an upload of its own.

A :class:`TextBudget` bounds the page text of one file (relative to its size, and in all).
The built-in readers take one (``default_readers(budget)``) and stop as soon as a file
crosses it; :func:`read_file` checks what any reader returned, plugins' included, against
its own. Errors are :class:`LoaderError` subclasses with a ``reason`` for the user, and
they survive pickling, so a file read in a worker process fails in the caller alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ragloom.loaders.archive import ArchiveContents, ArchiveMember, expand_zip
from ragloom.loaders.base import (
    EmptyDocumentError,
    FileBudgetError,
    FileReader,
    LoaderError,
    TextBudget,
    TextMeter,
    UnreadableFileError,
    UnsupportedFileTypeError,
    file_size,
    without_surrogates,
)
from ragloom.loaders.docx import DocxReader
from ragloom.loaders.html import HtmlReader
from ragloom.loaders.pdf import PdfReader
from ragloom.loaders.tabular import CsvReader, JsonReader
from ragloom.loaders.text import TextReader, decode_text
from ragloom.schema import Page
from ragloom.storable import storable_text

__all__ = [
    "ArchiveContents",
    "ArchiveMember",
    "CsvReader",
    "DocxReader",
    "EmptyDocumentError",
    "FileBudgetError",
    "FileReader",
    "HtmlReader",
    "JsonReader",
    "LoaderError",
    "PdfReader",
    "TextBudget",
    "TextMeter",
    "TextReader",
    "UnreadableFileError",
    "UnsupportedFileTypeError",
    "decode_text",
    "default_readers",
    "expand_zip",
    "read_file",
    "without_surrogates",
]


def default_readers(budget: TextBudget | None = None) -> dict[str, FileReader]:
    """A new mapping from extension (``".pdf"``) to the built-in reader for it.

    The readers stop at ``budget`` (default: :class:`TextBudget()`).
    """
    budget = budget or TextBudget()
    readers: dict[str, FileReader] = {}
    built_in: tuple[FileReader, ...] = (
        TextReader(budget),
        PdfReader(budget),
        HtmlReader(budget),
        DocxReader(budget),
        CsvReader(budget),
        JsonReader(budget),
    )
    for reader in built_in:
        for extension in reader.extensions:
            readers[extension] = reader
    return readers


def read_file(
    path: Path,
    readers: Mapping[str, FileReader] | None = None,
    budget: TextBudget | None = None,
) -> list[Page]:
    """The pages of text in ``path``, read by the reader registered for its extension.

    ``readers`` maps lower-case extensions with their dot to readers; ``None`` uses
    :func:`default_readers` (with ``budget``). Whatever the reader, its pages must fit in
    ``budget`` (default: :class:`TextBudget()`), and lone surrogates in them (which no
    encoder accepts) and NULs (which PostgreSQL cannot store) become U+FFFD, one for one,
    so that every store keeps the same text and offsets still point into it. Raises a
    :class:`LoaderError` (with a user-facing ``reason``) for a file type nobody reads, a
    file that has no readable text, or one that would give more text than its budget
    (:class:`FileBudgetError`).
    """
    path = Path(path)
    budget = budget or TextBudget()
    table = default_readers(budget) if readers is None else readers
    extension = path.suffix.lower()
    reader = table.get(extension)
    if reader is None:
        raise UnsupportedFileTypeError(extension, table.keys(), path)
    pages = reader.read(path)
    return _within_budget(pages, path, budget)


def _within_budget(pages: list[Page], path: Path, budget: TextBudget) -> list[Page]:
    """``pages`` checked against ``budget``, freed of lone surrogates and NULs."""
    size = file_size(path, refuse_empty=False)  # the reader refused an empty file already
    kind = f"{path.suffix.lower()} file" if path.suffix else "file"
    meter = budget.meter(size, kind, path)
    checked: list[Page] = []
    for page in pages:
        meter.add(len(page.text))
        # Here, not in each store: the chunks are cut from this text, so the database, the
        # vector store and the full-text store all get the same (JSON's "\u0000", a UTF-16
        # text file's NUL, a plugin reader's anything).
        text = storable_text(without_surrogates(page.text))
        checked.append(page if text is page.text else Page(text=text, number=page.number))
    return checked
