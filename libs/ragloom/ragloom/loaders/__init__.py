"""Reading uploaded files into pages of text.

:func:`read_file` picks a reader by the file's lower-case extension. The app can add
readers (plugins) by passing its own mapping, usually built from :func:`default_readers`::

    readers = {**default_readers(), ".html": HtmlReader()}
    pages = read_file(path, readers)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ragloom.loaders.base import (
    EmptyDocumentError,
    FileReader,
    LoaderError,
    UnreadableFileError,
    UnsupportedFileTypeError,
)
from ragloom.loaders.pdf import PdfReader
from ragloom.loaders.text import TextReader
from ragloom.schema import Page

__all__ = [
    "EmptyDocumentError",
    "FileReader",
    "LoaderError",
    "PdfReader",
    "TextReader",
    "UnreadableFileError",
    "UnsupportedFileTypeError",
    "default_readers",
    "read_file",
]


def default_readers() -> dict[str, FileReader]:
    """A new mapping from extension (``".pdf"``) to the built-in reader for it."""
    readers: dict[str, FileReader] = {}
    for reader in (TextReader(), PdfReader()):
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
