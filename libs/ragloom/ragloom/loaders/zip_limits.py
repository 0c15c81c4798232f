"""A zip's limits, judged from its headers before anything is unpacked.

:class:`ZipLimits` says what an archive may unpack to; :func:`declared_problem` judges the
sizes its directory declares, :func:`entries_problem` the size of the directory itself
(from the end record, before the directory is listed). :func:`ragloom.loaders.archive.
expand_zip` and the Word reader (a .docx is a zip) both use them.
"""

from __future__ import annotations

import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragloom.byte_sizes import size_text
from ragloom.loaders.zip_names import display_name

__all__ = [
    "ZipLimits",
    "declared_entries",
    "declared_problem",
    "entries_problem",
    "total_problem",
]


@dataclass(frozen=True)
class ZipLimits:
    """What a zip may unpack to before it is refused as a zip bomb.

    ``max_members`` files; ``max_total_bytes`` unpacked in all (1 GiB: a laptop's disk and
    the index survive it, and the upload budgets bound what follows); a member, or the
    archive as a whole, compressed more than ``max_ratio`` to 1 (200: text compresses 3
    to 10 times, repetitive logs or XML rarely past 100; zeros compress 1000 times).
    Sizes under ``ratio_floor`` (1 MiB) are not judged by their ratio: a few KB of one
    repeated character compress more than 200 times without being any threat, and the
    total bounds them. ``max_entries`` bounds the entries of the zip's directory, folders
    included, read from its end record before the directory itself: listing each entry
    costs the app about 460 bytes, so a 200 MB zip of four million empty folders would
    take 2 GB before any other check could refuse it. The end record's count can lie, but
    zipfile reads no more of the directory than the end record's size of it says, so
    ``max_directory_bytes`` (4 MiB: a thousand bytes an entry) bounds the listing whatever
    the count.
    """

    max_members: int = 1000
    max_total_bytes: int = 1 << 30
    max_ratio: float = 200.0
    ratio_floor: int = 1 << 20
    max_entries: int = 4000
    max_directory_bytes: int = 4 << 20


def declared_problem(
    files: list[zipfile.ZipInfo],
    archive_bytes: int,
    limits: ZipLimits,
    *,
    what: str = "the archive",
    room_bytes: int | None = None,
) -> str | None:
    """Why a zip whose headers list ``files`` is refused (``None``: it is not).

    ``archive_bytes`` is the size of the zip file itself, for the ratio of the whole;
    ``what`` names it in the reason (``"the document"``).
    """
    if len(files) > limits.max_members:
        return f"{what} has {len(files)} files, more than the limit of {limits.max_members}"
    for info in files:
        if (
            info.file_size >= limits.ratio_floor
            and info.file_size > limits.max_ratio * info.compress_size
        ):
            ratio = info.file_size / max(info.compress_size, 1)
            return (
                f"'{display_name(info)}' is compressed {ratio:.0f} to 1, more than the limit "
                f"of {limits.max_ratio:g} to 1 (a zip bomb?)"
            )
    total = sum(info.file_size for info in files)
    return total_problem(total, archive_bytes, limits, what, room_bytes)


def total_problem(
    total: int,
    archive_bytes: int,
    limits: ZipLimits,
    what: str,
    room_bytes: int | None,
    because: str = "",
) -> str | None:
    """Why unpacking ``total`` bytes from a zip of ``archive_bytes`` is refused, or ``None``."""
    if total > limits.max_total_bytes:
        return (
            f"{because}{what} would unpack to {size_text(total)}, more than the limit of "
            f"{size_text(limits.max_total_bytes)} (a zip bomb?)"
        )
    if total >= limits.ratio_floor and total > limits.max_ratio * archive_bytes:
        ratio = total / max(archive_bytes, 1)
        return (
            f"{because}{what} would unpack to {size_text(total)} from {size_text(archive_bytes)}: "
            f"compressed {ratio:.0f} to 1 as a whole, more than the limit of "
            f"{limits.max_ratio:g} to 1 (a zip bomb?)"
        )
    if room_bytes is not None and total > room_bytes:
        return (
            f"{because}{what} would unpack to {size_text(total)}, more than the "
            f"{size_text(max(room_bytes, 0))} left of the upload's budget"
        )
    return None


def _end_record(path: Path) -> list[Any] | None:
    """The zip's end record as zipfile reads it (``None``: it has none, or a broken one)."""
    try:
        with path.open("rb") as handle:
            # zipfile's own reader of the end record (zip64 included): private, but the
            # same since Python 2.6, and the one ZipFile itself trusts.
            return zipfile._EndRecData(handle)  # type: ignore[attr-defined,no-any-return]
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, struct.error):
        return None


def declared_entries(path: Path) -> int | None:
    """The number of entries the zip at ``path`` says its directory holds, read from its
    end record alone (``None``: it has no readable one, so it is not a zip)."""
    end = _end_record(path)
    return None if end is None else int(end[zipfile._ECD_ENTRIES_TOTAL])  # type: ignore[attr-defined]


def entries_problem(path: Path, limits: ZipLimits, what: str = "the archive") -> str | None:
    """Why the zip at ``path`` is refused for the size of its directory, or ``None``.

    Both what the end record says the directory holds and its size in bytes (which is
    all zipfile will read of it, whatever the count says) are checked.
    """
    end = _end_record(path)
    if end is None:
        return None
    entries = int(end[zipfile._ECD_ENTRIES_TOTAL])  # type: ignore[attr-defined]
    directory = int(end[zipfile._ECD_SIZE])  # type: ignore[attr-defined]
    if entries > limits.max_entries:
        return (
            f"{what} lists {entries:,} entries (files and folders), more than the limit of "
            f"{limits.max_entries:,}"
        )
    if directory > limits.max_directory_bytes:
        return (
            f"{what} has a directory of {size_text(directory)}, more than the limit of "
            f"{size_text(limits.max_directory_bytes)}"
        )
    return None
