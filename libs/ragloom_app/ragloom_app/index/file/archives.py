"""Zip archives in an upload: expanded in a private folder of the index, then removed.

The expansion itself (limits against zip bombs, refusing unsafe member paths and nested
archives) is :func:`ragloom.loaders.archive.expand_zip`; this module gives it a folder
inside the index's data folder, owned by a :class:`WorkLock` so that a crash leaves
nothing another start cannot tell from work in progress and clean up.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import TypeVar

from ragloom.loaders import LoaderError
from ragloom.loaders.archive import ArchiveContents, ZipLimits, expand_zip
from ragloom_app.errors import user_error
from ragloom_app.index.base import FileOutcome, IndexingProgress
from ragloom_app.index.budget import UploadBudget
from ragloom_app.index.file.names import (
    MAX_PATH_LENGTH,
    UnsafeNameError,
    clean_name,
    safe_display_name,
)
from ragloom_app.index.file.worklock import WorkLock, is_busy

__all__ = [
    "ARCHIVE_SUFFIXES",
    "clean_stale_archives",
    "expanded_archive",
    "index_archive",
    "member_display_name",
    "reported_name",
    "shown_member_name",
]

logger = logging.getLogger(__name__)

Event = TypeVar("Event")  # what the caller's callables yield: progress, outcomes and more

#: Suffixes expanded into their members instead of being read as one document.
ARCHIVE_SUFFIXES = frozenset({".zip"})

_PREFIX = "archive-"
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


@contextlib.contextmanager
def expanded_archive(
    path: Path,
    tmp_root: Path,
    locks_dir: Path,
    limits: ZipLimits | None = None,
    room_bytes: int | None = None,
) -> Iterator[ArchiveContents]:
    """Expand the zip ``path`` into a new folder under ``tmp_root``, removed on exit.

    Raises :class:`ragloom.loaders.LoaderError` (``reason`` for the user) for a damaged
    archive, one over ``limits`` (a zip bomb), or one that would unpack to more than
    ``room_bytes``.
    """
    key = f"{_PREFIX}{uuid.uuid4().hex}"
    # Locked before the folder exists, so another process never sees it unowned.
    with WorkLock(locks_dir, key):
        dest = tmp_root / key
        dest.mkdir(parents=True)
        try:
            yield expand_zip(path, dest, limits=limits, room_bytes=room_bytes)
        finally:
            shutil.rmtree(dest, ignore_errors=True)


def index_archive(
    path: Path,
    name: str,
    index_member: Callable[[Path, str, tuple[float, float]], Iterator[Event]],
    report: Callable[[FileOutcome, float], Iterator[Event]],
    *,
    tmp_root: Path,
    locks_dir: Path,
    span: tuple[float, float] = (0.0, 1.0),
    limits: ZipLimits | None = None,
    budget: UploadBudget | None = None,
) -> Iterator[IndexingProgress | Event]:
    """Index each member of the zip ``path`` (shown as ``name``) with ``index_member``.

    ``index_member(member_path, display_name, span)`` gives the events of one file (its
    outcome may come later: the pipeline embeds small files together), ``report(outcome,
    fraction)`` those of an outcome decided here. One outcome per member: a skipped member
    (unsafe path, nested archive, damaged) is ``failed`` with the reason, and an archive
    that cannot be expanded at all (over ``limits``, or over what the upload's ``budget``
    has left) is one ``failed`` outcome under ``name``. What it unpacks to is spent from
    ``budget``. Progress goes from ``span[0]`` to ``span[1]``. The members are read before
    the expanded folder is removed; what the pipeline keeps of them is its own copy.
    """
    start, end = span
    room = budget.bytes_left if budget is not None else None
    with contextlib.ExitStack() as stack:
        try:
            contents = stack.enter_context(
                expanded_archive(path, tmp_root, locks_dir, limits, room)
            )
        except LoaderError as exc:
            yield from report(FileOutcome(name, "failed", reason=exc.reason), end)
            return
        except Exception as exc:
            # The disk, or a zipfile error no check foresaw: this archive fails alone, in
            # words with a log reference, and the rest of the upload goes on.
            reason = user_error(exc, "Expanding the archive", log=logger).message
            yield from report(FileOutcome(name, "failed", reason=reason), end)
            return
        if budget is not None:
            budget.spend_bytes(contents.unpacked_bytes)  # fits: room bounded the expansion
        for member_name, why in contents.skipped:
            shown_skipped = f"{name}/{shown_member_name(member_name)}"
            yield from report(FileOutcome(shown_skipped, "failed", reason=why), start)
        count = max(len(contents.members), 1)
        for number, member in enumerate(contents.members):
            low = start + (end - start) * number / count
            high = start + (end - start) * (number + 1) / count
            try:
                shown = member_display_name(name, member.name)
            except UnsafeNameError as exc:
                refused = f"{name}/{shown_member_name(member.name)}"
                yield from report(FileOutcome(refused, "failed", reason=str(exc)), high)
                continue
            yield IndexingProgress(shown, low, "reading")
            yield from index_member(member.path, shown, (low, high))
        if not contents.members:
            yield IndexingProgress(name, end, "failed")


def clean_stale_archives(tmp_root: Path, locks_dir: Path) -> int:
    """Remove folders left by processes that died while expanding; returns how many."""
    if not tmp_root.is_dir():
        return 0
    removed = 0
    for child in tmp_root.iterdir():
        if child.name.startswith(_PREFIX) and not is_busy(locks_dir, child.name):
            shutil.rmtree(child, ignore_errors=True)
            removed += 1
    if removed:
        logger.info("removed %d archive folders left by an interrupted upload", removed)
    return removed


def member_display_name(archive_name: str, member_name: str) -> str:
    """``archive.zip/folder/file.md``: the name a member is listed and cited under.

    Every part of the member's path is cleaned as an upload's name is
    (:func:`~ragloom_app.index.file.names.clean_name`: invisible characters removed, NFC);
    raises :class:`UnsafeNameError` for a part it refuses, a path that leaves the archive,
    or a whole name over :data:`~ragloom_app.index.file.names.MAX_PATH_LENGTH` characters.
    """
    parts = PurePosixPath(member_name).parts
    if not parts:
        raise UnsafeNameError("the archive member has no name")
    cleaned = []
    for part in parts:
        if part in {".", "..", "/"} or "\\" in part:
            raise UnsafeNameError(f"unsafe path in the archive: {shown_member_name(member_name)}")
        cleaned.append(clean_name(part))
    shown = f"{archive_name}/{'/'.join(cleaned)}"
    # Each part is at most 255 characters, but a zip may nest thousands of folders: a
    # 64,000-character name went into every chunk's metadata, and an export of the index
    # could not be imported.
    if len(shown) > MAX_PATH_LENGTH:
        raise UnsafeNameError(
            f"the name in the archive is {len(shown):,} characters long, folders included; "
            f"the limit is {MAX_PATH_LENGTH:,}"
        )
    return shown


def shown_member_name(member_name: str, limit: int = 200) -> str:
    """A name fit to show whatever it holds (a refused one included).

    Control and format characters (bidirectional overrides too), line separators and
    lone surrogates become ``?``, so the name shows in the order it was written.
    """
    cleaned = "".join(
        "?" if unicodedata.category(ch) in _HIDDEN_CATEGORIES else ch for ch in member_name
    )
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


def reported_name(raw_name: str) -> str:
    """The name an uploaded file's progress and outcome are reported under: its display
    name (:func:`safe_display_name`), or, for a name refused, the name as
    :func:`shown_member_name` shows it. Never the raw name: it may hold a NUL, which
    PostgreSQL's text columns refuse (a job's progress would fail the whole job)."""
    try:
        return safe_display_name(raw_name)
    except UnsafeNameError:
        return shown_member_name(raw_name, 120)
