"""What every file reader implements, and the errors a reader raises for a file it refuses.

Each error carries a short ``reason`` written for the person who uploaded the file (the app
shows it next to the file name), and optionally the ``path`` it is about.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ragloom.schema import Page

__all__ = [
    "EmptyDocumentError",
    "FileReader",
    "LoaderError",
    "UnreadableFileError",
    "UnsupportedFileTypeError",
]


class LoaderError(Exception):
    """A file could not be turned into text; ``reason`` says why in a few words."""

    def __init__(self, reason: str, path: Path | None = None) -> None:
        self.reason = reason
        self.path = path
        super().__init__(f"{path.name}: {reason}" if path is not None else reason)

    def __reduce__(self) -> tuple[Any, ...]:
        # Files are read in worker processes: the error must come back with its reason
        # and class, whatever the subclass's __init__ takes.
        return (_restore_error, (type(self), self.args, self.__dict__))


def _restore_error(cls: type[LoaderError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


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
