"""Zip archives, unpacked safely into a folder so each member can be indexed like an upload.

A zip is not a :class:`~ragloom.loaders.base.FileReader`: it holds files, not text. The app
calls :func:`expand_zip` and then reads each member with the reader for its own extension.

An uploaded archive is untrusted, so :func:`expand_zip`:

- refuses a zip bomb before writing anything (:class:`ZipLimits`): too many files, a
  declared total size over the limit (or over what the caller's budget has left), a member
  compressed more than the ratio limit allows, or the archive as a whole compressed more
  than that (many members just under the size where a member's ratio is judged); and
  counts the bytes it actually writes against the same limits, because the sizes in a
  zip's headers can lie;
- counts a member that is itself a zip (an Office or ODF document, an EPUB: recognised by
  its content, not its extension) as a nested archive: what it declares it unpacks to
  counts toward the archive's total and ratio, so a zip of small documents that each
  inflate to hundreds of MB is refused; one whose own directory is too large to list is
  skipped alone, the rest of the archive unpacked;
- never writes outside ``dest``: each member is written under a new flat name (its position
  and a sanitised base name); members whose names try to escape (``..``, absolute paths,
  drive letters, NUL) are skipped and reported, as are symbolic links, encrypted members,
  nested archives and damaged members.
"""

from __future__ import annotations

import logging
import lzma
import zipfile
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from ragloom.byte_sizes import size_text
from ragloom.loaders.base import EmptyDocumentError, UnreadableFileError, file_size
from ragloom.loaders.zip_limits import (
    ZipLimits,
    declared_entries,
    declared_problem,
    entries_problem,
    total_problem,
)
from ragloom.loaders.zip_names import flat_file_name, is_directory, member_name

__all__ = [
    "ArchiveContents",
    "ArchiveMember",
    "ZipLimits",
    "declared_entries",
    "declared_problem",
    "entries_problem",
    "expand_zip",
]

logger = logging.getLogger(__name__)

_BLOCK = 1 << 20
# What zipfile and its decompressors raise for a damaged member (OSError comes from bz2).
_MEMBER_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    NotImplementedError,
    RuntimeError,
    ValueError,
    OSError,
)


@dataclass(frozen=True)
class ArchiveMember:
    """A file unpacked from an archive.

    ``name`` is its path inside the archive, normalised (``/``-separated, no ``.`` parts);
    ``path`` is where it was written, a file directly under the ``dest`` folder.
    """

    name: str
    path: Path


@dataclass(frozen=True)
class ArchiveContents:
    """The members :func:`expand_zip` unpacked, and the ``(name, reason)`` of those it skipped.

    ``unpacked_bytes`` is what the archive expands to: the bytes written, plus what its
    nested archives (documents that are zips) declare they unpack to.
    """

    members: list[ArchiveMember]
    skipped: list[tuple[str, str]]
    unpacked_bytes: int = 0


class _Refused(Exception):
    """The archive as a whole is refused (a limit was crossed while unpacking)."""


class _Damaged(Exception):
    """One member cannot be unpacked."""


class _MemberRefused(Exception):
    """One member is over a limit of its own: it is skipped, the archive goes on."""


def expand_zip(
    path: Path,
    dest: Path,
    *,
    max_members: int | None = None,
    max_total_bytes: int | None = None,
    max_ratio: float | None = None,
    limits: ZipLimits | None = None,
    room_bytes: int | None = None,
) -> ArchiveContents:
    """Unpack the zip at ``path`` into the folder ``dest`` (created if missing).

    Directory entries are passed over; each file member is either unpacked (in
    :attr:`ArchiveContents.members`, in archive order) or skipped with a reason. Raises
    :class:`UnreadableFileError` for a file that is not a zip or an archive over a limit
    of ``limits`` (``max_members``, ``max_total_bytes`` and ``max_ratio`` override its
    fields), or that would unpack to more than ``room_bytes``, what is left of the
    upload's budget; it deletes anything it wrote first. Raises
    :class:`EmptyDocumentError` for an archive with no files. Existing files in ``dest``
    are never overwritten (``FileExistsError``): give each archive a fresh folder.
    """
    limits = _limits(limits, max_members, max_total_bytes, max_ratio)
    path, dest = Path(path), Path(dest)
    size = file_size(path)
    problem = entries_problem(path, limits)
    if problem:
        raise UnreadableFileError(problem, path)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise UnreadableFileError(f"not a valid zip archive: {_detail(exc)}", path) from exc
    with archive:
        files = [info for info in archive.infolist() if not is_directory(info)]
        if not files:
            raise EmptyDocumentError("the archive has no files", path)
        problem = declared_problem(files, size, limits, room_bytes=room_bytes)
        if problem:
            raise UnreadableFileError(problem, path)
        return _Unpacker(archive, files, path, dest, size, limits, room_bytes).run()


def _limits(
    limits: ZipLimits | None,
    max_members: int | None,
    max_total_bytes: int | None,
    max_ratio: float | None,
) -> ZipLimits:
    chosen = limits or ZipLimits()
    if max_members is None and max_total_bytes is None and max_ratio is None:
        return chosen
    return replace(
        chosen,
        max_members=chosen.max_members if max_members is None else max_members,
        max_total_bytes=chosen.max_total_bytes if max_total_bytes is None else max_total_bytes,
        max_ratio=chosen.max_ratio if max_ratio is None else max_ratio,
    )


def _nested_total(path: Path, limits: ZipLimits) -> int:
    """What the zip at ``path`` (a member) declares it unpacks to (0 if it is not a
    readable zip); raises ``_MemberRefused`` if its directory is over ``limits``' bounds.

    Any file that zipfile would open counts, whatever its first bytes: a zip may follow
    a prefix of anything (a self-extractor), and python-docx opens such a file too.
    """
    if declared_entries(path) is None:  # no end record: not a zip
        return 0
    problem = entries_problem(path, limits, what="it")
    if problem:
        # That member alone: its directory is too large to list for the count, which is
        # all that is wrong with it so far (read alone, a .docx may list 20,000 entries).
        raise _MemberRefused(
            f"it is itself an archive (a .docx, .xlsx, .odt … is one), and {problem} for "
            "an archive inside another; add it on its own"
        )
    try:
        with zipfile.ZipFile(path) as nested:
            return sum(info.file_size for info in nested.infolist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return 0  # damaged: its reader will say so; it unpacks to nothing here


class _Unpacker:
    """Writes the members of one archive, counting nested archives as it goes."""

    def __init__(
        self,
        archive: zipfile.ZipFile,
        files: list[zipfile.ZipInfo],
        path: Path,
        dest: Path,
        size: int,
        limits: ZipLimits,
        room_bytes: int | None,
    ) -> None:
        self.archive, self.files, self.path, self.dest = archive, files, path, dest
        self.size, self.limits, self.room_bytes = size, limits, room_bytes
        self.declared = sum(info.file_size for info in files)
        self.nested = 0  # what the members that are zips declare they unpack to

    def run(self) -> ArchiveContents:
        created = not self.dest.exists()
        self.dest.mkdir(parents=True, exist_ok=True)
        members: list[ArchiveMember] = []
        skipped: list[tuple[str, str]] = []
        written = 0
        try:
            for index, info in enumerate(self.files, start=1):
                name, reason = member_name(info)
                if reason is not None:
                    skipped.append(self._skipped(name, reason))
                    continue
                target = self.dest / flat_file_name(index, name)
                if target.parent != self.dest:  # cannot happen: _file_name leaves no separator
                    raise AssertionError(f"unsafe target {target!r}")
                try:
                    copied = _copy(self.archive, info, name, target)
                except _Damaged as exc:
                    skipped.append(self._skipped(name, exc))
                    continue
                members.append(ArchiveMember(name=name, path=target))  # removed if refused
                try:
                    self._count_nested(name, target)
                except _MemberRefused as exc:
                    members.pop().path.unlink()
                    skipped.append(self._skipped(name, exc))
                    continue
                written += copied
        except BaseException as exc:
            # Refused (the headers lied), disk full, interrupted: leave no half-unpacked archive.
            for member in members:
                member.path.unlink(missing_ok=True)
            if created and not any(self.dest.iterdir()):
                self.dest.rmdir()
            if isinstance(exc, _Refused):
                raise UnreadableFileError(str(exc), self.path) from exc
            raise
        logger.info(
            "%s: unpacked %d files (%s), skipped %d",
            self.path.name,
            len(members),
            size_text(written),
            len(skipped),
        )
        return ArchiveContents(members, skipped, unpacked_bytes=written + self.nested)

    def _skipped(self, name: str, reason: str | Exception) -> tuple[str, str]:
        """A skipped member's ``(name, reason)``, logged."""
        logger.warning("%s: skipped %r: %s", self.path.name, name, reason)
        return name, str(reason)

    def _count_nested(self, name: str, target: Path) -> None:
        """Count a member that is itself a zip toward the archive's limits: raises
        ``_MemberRefused`` for that member alone, ``_Refused`` for the archive."""
        inner = _nested_total(target, self.limits)
        if not inner:
            return
        self.nested += inner
        because = f"'{name}' is itself an archive that unpacks to {size_text(inner)}, so "
        expanded = self.declared + self.nested
        problem = total_problem(
            expanded, self.size, self.limits, "the archive", self.room_bytes, because
        )
        if problem:
            raise _Refused(problem)


def _copy(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, target: Path) -> int:
    """Write one member to ``target``; the number of bytes written. Cleans up on failure.

    No member may write more than its header declares. The declared sizes were already
    checked against the archive's limits, so this bounds the real total as well.
    """
    try:
        source = archive.open(info)
    except _MEMBER_ERRORS as exc:
        raise _Damaged(f"damaged: {_detail(exc)}") from exc
    written = 0
    with source:
        out = target.open("xb")  # never replaces a file: FileExistsError reaches the caller
        try:
            with out:
                while block := _read(source):
                    written += len(block)
                    if written > info.file_size:
                        # zipfile stops at the declared size today; do not rely on it.
                        raise _Refused(
                            f"'{name}' unpacks to more than the {size_text(info.file_size)} its "
                            "header declares (a zip bomb?)"
                        )
                    out.write(block)
        except BaseException:
            target.unlink(missing_ok=True)
            raise
    return written


def _read(source: IO[bytes]) -> bytes:
    try:
        return source.read(_BLOCK)
    except _MEMBER_ERRORS as exc:
        raise _Damaged(f"damaged: {_detail(exc)}") from exc


def _detail(exc: BaseException) -> str:
    """A one-line description of a zipfile error for the user."""
    text = " ".join(str(exc).split())
    return text[:200] if text else type(exc).__name__
