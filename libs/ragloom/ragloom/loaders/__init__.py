"""Reading uploaded files into pages of text.

:func:`read_file` picks a reader by the file's lower-case extension. The app can add
readers (plugins) by passing its own mapping, usually built from :func:`default_readers`::

    readers = {**default_readers(), ".rtf": RtfReader()}
    pages = read_file(path, readers)

Zip archives are not read but unpacked, with :func:`expand_zip`; each member is then read
like an upload of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ragloom.loaders.archive import ArchiveContents, ArchiveMember, expand_zip
from ragloom.loaders.base import (
    EmptyDocumentError,
    FileReader,
    LoaderError,
    UnreadableFileError,
    UnsupportedFileTypeError,
)
from ragloom.loaders.docx import DocxReader
from ragloom.loaders.html import HtmlReader
from ragloom.loaders.pdf import PdfReader
from ragloom.loaders.tabular import CsvReader, JsonReader
from ragloom.loaders.text import TextReader, decode_text
from ragloom.schema import Page

__all__ = [
    "ArchiveContents",
    "ArchiveMember",
    "CsvReader",
    "DocxReader",
    "EmptyDocumentError",
    "FileReader",
    "HtmlReader",
    "JsonReader",
    "LoaderError",
    "PdfReader",
    "TextReader",
    "UnreadableFileError",
    "UnsupportedFileTypeError",
    "decode_text",
    "default_readers",
    "expand_zip",
    "read_file",
]


def default_readers() -> dict[str, FileReader]:
    """A new mapping from extension (``".pdf"``) to the built-in reader for it."""
    readers: dict[str, FileReader] = {}
    built_in: tuple[FileReader, ...] = (
        TextReader(),
        PdfReader(),
        HtmlReader(),
        DocxReader(),
        CsvReader(),
        JsonReader(),
    )
    for reader in built_in:
        for extension in reader.extensions:
            readers[extension] = reader
    return readers


def read_file(path: Path, readers: Mapping[str, FileReader] | None = None) -> list[Page]:
    """The pages of text in ``path``, read by the reader registered for its extension.

    ``readers`` maps lower-case extensions with their dot to readers; ``None`` uses
    :func:`default_readers`. Raises a :class:`LoaderError` (with a user-facing ``reason``)
    for a file type nobody reads or a file that has no readable text.
    """
    path = Path(path)
    table = default_readers() if readers is None else readers
    extension = path.suffix.lower()
    reader = table.get(extension)
    if reader is None:
        raise UnsupportedFileTypeError(extension, table.keys(), path)
    return reader.read(path)
