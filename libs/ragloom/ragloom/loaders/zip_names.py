"""The names of zip members: decoded, checked for escapes, and turned into safe file names.

:func:`member_name` says why a member is skipped (a path that leaves the archive, a
symbolic link, an encrypted or nested archive); :func:`flat_file_name` gives each member a
file name with no folder in it, so nothing is ever written outside the archive's folder.
"""

from __future__ import annotations

import contextlib
import re
import stat
import zipfile

__all__ = ["display_name", "flat_file_name", "is_directory", "member_name"]

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


def is_directory(info: zipfile.ZipInfo) -> bool:
    """Whether the entry is a folder (by its name, or its MS-DOS or Unix mode)."""
    return (
        info.orig_filename.replace("\\", "/").endswith("/")
        or bool(info.external_attr & _MSDOS_DIRECTORY)
        or stat.S_ISDIR(info.external_attr >> 16)
    )


def display_name(info: zipfile.ZipInfo) -> str:
    """The member's name as written in the archive, decoded, with NUL made visible."""
    name = info.orig_filename
    if not info.flag_bits & _UTF8_FLAG and not name.isascii():
        # Without the UTF-8 flag zipfile decodes names as cp437, but many tools write UTF-8
        # without setting it: recover such names, keep the others.
        with contextlib.suppress(UnicodeError):
            name = name.encode("cp437").decode("utf-8")
    return name.replace("\x00", "\\x00")


def member_name(info: zipfile.ZipInfo) -> tuple[str, str | None]:
    """The normalised name of a member, and why it is skipped (``None`` to unpack it)."""
    shown = display_name(info)
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


def flat_file_name(index: int, name: str) -> str:
    """A safe, unique flat file name for member ``index``: ``0001-report.pdf``."""
    base = _UNSAFE_CHARS.sub("_", name.rsplit("/", 1)[-1]).rstrip(" .") or "file"
    stem, dot, extension = base.rpartition(".")
    if not dot or not stem or len(extension) > _MAX_EXTENSION_CHARS:
        stem, extension = base, ""
    suffix = f".{extension}" if extension else ""
    room = _MAX_NAME_BYTES - len(suffix.encode())
    stem = stem.encode()[:room].decode(errors="ignore")
    return f"{index:04d}-{stem}{suffix}"
