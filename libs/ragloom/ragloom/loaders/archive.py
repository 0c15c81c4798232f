"""Zip archives, unpacked safely into a folder so each member can be indexed like an upload.

A zip is not a :class:`~ragloom.loaders.base.FileReader`: it holds files, not text. The app
calls :func:`expand_zip` and then reads each member with the reader for its own extension.

An uploaded archive is untrusted, so :func:`expand_zip`:

- refuses a zip bomb before writing anything: too many files, a declared total size over the
  limit, or a member compressed more than the ratio limit allows; and counts the bytes it
  actually writes against the same limits, because the sizes in a zip's headers can lie;
- never writes outside ``dest``: each member is written under a new flat name (its position
  and a sanitised base name); members whose names try to escape (``..``, absolute paths,
  drive letters, NUL) are skipped and reported, as are symbolic links, encrypted members,
  nested archives and damaged members.
"""

from __future__ import annotations

import contextlib
import logging
import lzma
import re
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ragloom.loaders.base import EmptyDocumentError, UnreadableFileError

__all__ = ["ArchiveContents", "ArchiveMember", "expand_zip"]

logger = logging.getLogger(__name__)

_BLOCK = 1 << 20
# A member smaller than this is not judged by its ratio: a few KB of one repeated character
# compress more than 200 times without being any threat; the total-size limit bounds them.
_RATIO_FLOOR = 1 << 20
_NESTED_ARCHIVES = (".zip", ".7z", ".rar", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".zst")
_ENCRYPTED_FLAG = 0x1
_UTF8_FLAG = 0x800
_MSDOS_DIRECTORY = 0x10
_DRIVE_LETTER = re.compile(r"[A-Za-z]:")
# Separators, control characters and what Windows forbids in a file name.
_UNSAFE_CHARS = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*]')
# Well under the 255-byte limit of common file systems, with room for the index prefix.
_MAX_NAME_BYTES = 120
_MAX_EXTENSION_CHARS = 16

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
    """The members :func:`expand_zip` unpacked, and the ``(name, reason)`` of those it skipped."""

    members: list[ArchiveMember]
    skipped: list[tuple[str, str]]


class _Refused(Exception):
    """The archive as a whole is refused (a limit was crossed while unpacking)."""


class _Damaged(Exception):
    """One member cannot be unpacked."""


def expand_zip(
    path: Path,
    dest: Path,
    *,
    max_members: int = 1000,
    max_total_bytes: int = 1 << 30,
    max_ratio: float = 200.0,
) -> ArchiveContents:
    """Unpack the zip at ``path`` into the folder ``dest`` (created if missing).

    Directory entries are passed over; each file member is either unpacked (in
    :attr:`ArchiveContents.members`, in archive order) or skipped with a reason. Raises
    :class:`UnreadableFileError` for a file that is not a zip or an archive over a limit
    (``max_members`` files, ``max_total_bytes`` unpacked, a member of 1 MiB or more
    compressed more than ``max_ratio`` times), having deleted anything it wrote; and
    :class:`EmptyDocumentError` for an archive with no files. Existing files in ``dest``
    are never overwritten (``FileExistsError``): give each archive a fresh folder.
    """
    path, dest = Path(path), Path(dest)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise UnreadableFileError(f"cannot read the file: {exc.strerror or exc}", path) from exc
    if size == 0:
        raise EmptyDocumentError("the file is empty", path)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise UnreadableFileError(f"not a valid zip archive: {_detail(exc)}", path) from exc
    with archive:
        files = [info for info in archive.infolist() if not _is_directory(info)]
        if not files:
            raise EmptyDocumentError("the archive has no files", path)
        try:
            _check_declared(files, max_members, max_total_bytes, max_ratio)
        except _Refused as exc:
            raise UnreadableFileError(str(exc), path) from exc
        return _unpack(archive, files, path, dest)


def _check_declared(
    files: list[zipfile.ZipInfo], max_members: int, max_total_bytes: int, max_ratio: float
) -> None:
    """Refuse an archive whose own headers already cross a limit."""
    if len(files) > max_members:
        raise _Refused(f"the archive has {len(files)} files, more than the limit of {max_members}")
    total = sum(info.file_size for info in files)
    if total > max_total_bytes:
        raise _Refused(
            f"the archive would unpack to {_size(total)}, more than the limit of "
            f"{_size(max_total_bytes)} (a zip bomb?)"
        )
    for info in files:
        if info.file_size >= _RATIO_FLOOR and info.file_size > max_ratio * info.compress_size:
            ratio = info.file_size / max(info.compress_size, 1)
            raise _Refused(
                f"'{_display_name(info)}' is compressed {ratio:.0f} to 1, more than the limit "
                f"of {max_ratio:g} to 1 (a zip bomb?)"
            )


def _unpack(
    archive: zipfile.ZipFile, files: list[zipfile.ZipInfo], path: Path, dest: Path
) -> ArchiveContents:
    created = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    members: list[ArchiveMember] = []
    skipped: list[tuple[str, str]] = []
    total = 0
    try:
        for index, info in enumerate(files, start=1):
            name, reason = _member_name(info)
            if reason is not None:
                logger.warning("%s: skipped %r: %s", path.name, name, reason)
                skipped.append((name, reason))
                continue
            target = dest / _file_name(index, name)
            if target.parent != dest:  # cannot happen: _file_name leaves no separator
                raise AssertionError(f"unsafe target {target!r}")
            try:
                total += _copy(archive, info, name, target)
            except _Damaged as exc:
                logger.warning("%s: skipped %r: %s", path.name, name, exc)
                skipped.append((name, str(exc)))
                continue
            members.append(ArchiveMember(name=name, path=target))
    except BaseException as exc:
        # Refused (the headers lied), disk full, interrupted: leave no half-unpacked archive.
        for member in members:
            member.path.unlink(missing_ok=True)
        if created and not any(dest.iterdir()):
            dest.rmdir()
        if isinstance(exc, _Refused):
            raise UnreadableFileError(str(exc), path) from exc
        raise
    logger.info(
        "%s: unpacked %d files (%s), skipped %d",
        path.name,
        len(members),
        _size(total),
        len(skipped),
    )
    return ArchiveContents(members=members, skipped=skipped)


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
                            f"'{name}' unpacks to more than the {_size(info.file_size)} its "
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


def _is_directory(info: zipfile.ZipInfo) -> bool:
    return (
        info.orig_filename.replace("\\", "/").endswith("/")
        or bool(info.external_attr & _MSDOS_DIRECTORY)
        or stat.S_ISDIR(info.external_attr >> 16)
    )


def _display_name(info: zipfile.ZipInfo) -> str:
    """The member's name as written in the archive, decoded, with NUL made visible."""
    name = info.orig_filename
    if not info.flag_bits & _UTF8_FLAG and not name.isascii():
        # Without the UTF-8 flag zipfile decodes names as cp437, but many tools write UTF-8
        # without setting it: recover such names, keep the others.
        with contextlib.suppress(UnicodeError):
            name = name.encode("cp437").decode("utf-8")
    return name.replace("\x00", "\\x00")


def _member_name(info: zipfile.ZipInfo) -> tuple[str, str | None]:
    """The normalised name of a member, and why it is skipped (``None`` to unpack it)."""
    shown = _display_name(info)
    if "\x00" in info.orig_filename:
        return shown, "unsafe name: it contains a NUL character"
    name = shown.replace("\\", "/")
    if name.startswith("/"):
        return shown, "unsafe name: an absolute path"
    if _DRIVE_LETTER.match(name):
        return shown, "unsafe name: a path with a drive letter"
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        return shown, "unsafe name: the path leads out of the archive (..)"
    if not parts:
        return shown, "unsafe name: it is empty"
    name = "/".join(parts)
    if stat.S_ISLNK(info.external_attr >> 16):
        return name, "symbolic link"
    if info.flag_bits & _ENCRYPTED_FLAG:
        return name, "encrypted (password-protected)"
    if name.lower().endswith(_NESTED_ARCHIVES):
        return name, "nested archive (archives inside archives are not unpacked)"
    return name, None


def _file_name(index: int, name: str) -> str:
    """A safe, unique flat file name for member ``index``: ``0001-report.pdf``."""
    base = _UNSAFE_CHARS.sub("_", name.rsplit("/", 1)[-1]).rstrip(" .") or "file"
    stem, dot, extension = base.rpartition(".")
    if not dot or not stem or len(extension) > _MAX_EXTENSION_CHARS:
        stem, extension = base, ""
    suffix = f".{extension}" if extension else ""
    room = _MAX_NAME_BYTES - len(suffix.encode())
    stem = stem.encode()[:room].decode(errors="ignore")
    return f"{index:04d}-{stem}{suffix}"


def _size(n: int) -> str:
    """``n`` bytes for a person: ``"512 bytes"``, ``"48.8 MB"``."""
    if n < 1024:
        return f"{n} bytes"
    value = n / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def _detail(exc: BaseException) -> str:
    """A one-line description of a zipfile error for the user."""
    text = " ".join(str(exc).split())
    return text[:200] if text else type(exc).__name__
