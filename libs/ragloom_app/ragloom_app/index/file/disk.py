"""Telling a full disk from other failures: a store that fails on one rarely says so."""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["DISK_FULL_BYTES", "disk_full_reason", "reference_of"]

#: Free bytes below which a store's failure is put down to the full disk under it.
DISK_FULL_BYTES = 8 * 1024 * 1024


def disk_full_reason(folder: Path, below: int = DISK_FULL_BYTES) -> str | None:
    """What to tell the user when the disk holding ``folder`` is (nearly) full, else None."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return None
    if free >= below:
        return None
    return (
        f"the disk holding the data folder is full ({free / 1e6:.1f} MB free): "
        "free some space, then add the file again"
    )


def reference_of(message: str) -> str:
    """The trailing " (log reference ...)" of a user error's message, or ""."""
    start = message.rfind(" (log reference ")
    return message[start:] if start >= 0 else ""
