"""Make an uploaded file's name safe to show and to use as a file suffix."""

from __future__ import annotations

import unicodedata
from pathlib import PurePosixPath, PureWindowsPath

__all__ = ["MAX_NAME_LENGTH", "UnsafeNameError", "safe_display_name"]

MAX_NAME_LENGTH = 255


class UnsafeNameError(ValueError):
    """A file name that cannot be accepted (empty, control characters, too long)."""


def safe_display_name(raw: str) -> str:
    """The base name of ``raw`` with any folders dropped; refuses names it cannot keep.

    Stored files are named by content hash, so a name never becomes a path; dropping
    folders (``../``) still keeps listings honest.
    """
    if "\x00" in raw:
        raise UnsafeNameError("the file name contains a NUL character")
    name = PureWindowsPath(PurePosixPath(raw).name).name.strip()
    if any(unicodedata.category(ch) == "Cc" for ch in name):
        raise UnsafeNameError("the file name contains control characters")
    if name in {"", ".", ".."}:
        raise UnsafeNameError("the file has no name")
    if len(name) > MAX_NAME_LENGTH:
        raise UnsafeNameError(
            f"the file name is {len(name)} characters long; the limit is {MAX_NAME_LENGTH}"
        )
    return name
