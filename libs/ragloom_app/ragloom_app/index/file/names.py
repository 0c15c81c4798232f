"""Make an uploaded file's name safe to show and to use as a file suffix.

What a listing and a citation show must be what the file is called, so a name is cleaned
before it is stored (:func:`clean_name`):

- Refused, with a reason: NUL and other control characters; bidirectional embeddings,
  overrides and isolates (U+202A-U+202E, U+2066-U+2069), which reorder what is displayed
  (``invoice\\u202efdp.exe`` shows as ``invoiceexe.pdf``); line and paragraph separators
  (U+2028, U+2029), which break a listing's lines; and lone surrogates (bytes of another
  encoding), which are not text. Such a name is an attempt to deceive or a broken name:
  guessing what was meant would show something the uploader did not write.
- Removed: other invisible format characters (Unicode category Cf: zero-width space,
  word joiner, byte order mark, soft hyphen, bidirectional marks U+200E/U+200F/U+061C,
  tag characters U+E0000-U+E007F, which can smuggle invisible ASCII text, ...) and the
  invisible Hangul fillers. They change nothing a reader sees, so dropping them keeps the
  name as it looks while making two look-alike names equal.
- Kept: the zero-width joiner and non-joiner (U+200D, U+200C) between two visible
  characters, where Persian, Indic scripts and emoji sequences need them; elsewhere they
  join nothing and are removed.

The result is NFC-normalised, so a name typed on macOS (decomposed) and the same name
typed elsewhere are one name.
"""

from __future__ import annotations

import unicodedata
from pathlib import PurePosixPath, PureWindowsPath

__all__ = [
    "MAX_NAME_LENGTH",
    "MAX_PATH_LENGTH",
    "UnsafeNameError",
    "clean_name",
    "safe_display_name",
]

#: Characters in a file's name, or in each part of an archive member's path.
MAX_NAME_LENGTH = 255
#: Characters in an archive member's whole name (``archive.zip/folder/…/file.md``), which
#: every chunk of it carries in its metadata: Linux's PATH_MAX, and what an index import
#: accepts, so that a file indexed from an archive can always be exported and imported.
MAX_PATH_LENGTH = 4096

# Embeddings, overrides and isolates: they reorder the text that follows them.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_JOINERS = frozenset("\u200c\u200d")
# Letters, marks (a virama before ZWNJ), numbers and symbols (emoji) can be joined.
_JOINABLE = ("L", "M", "N", "S")
# Category Lo, yet drawn as nothing.
_INVISIBLE_FILLERS = frozenset("\u115f\u1160\u3164\uffa0")


class UnsafeNameError(ValueError):
    """A file name that cannot be accepted (empty, control characters, too long)."""


def _code(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed character')}"


def _refusal(name: str) -> str | None:
    """Why ``name`` is refused as it is, or ``None``."""
    if "\x00" in name:
        return "the file name contains a NUL character"
    for ch in name:
        category = unicodedata.category(ch)
        if category == "Cc":
            return "the file name contains control characters"
        if ch in _BIDI_CONTROLS:
            return (
                f"the file name contains an invisible character that changes how it is "
                f"displayed ({_code(ch)}); rename the file"
            )
        if category in ("Zl", "Zp"):
            return f"the file name contains a line break ({_code(ch)}); rename the file"
        if category == "Cs":
            return "the file name is not valid text (bytes of another encoding); rename the file"
    return None


def _visible(ch: str | None) -> bool:
    return ch is not None and unicodedata.category(ch).startswith(_JOINABLE)


def _drop_invisible(name: str) -> str:
    """``name`` without the format characters that show nothing (see the module docs)."""
    kept: list[str] = []
    for position, ch in enumerate(name):
        if ch in _JOINERS:
            after = name[position + 1] if position + 1 < len(name) else None
            if _visible(kept[-1] if kept else None) and _visible(after):
                kept.append(ch)
            continue
        if unicodedata.category(ch) == "Cf" or ch in _INVISIBLE_FILLERS:
            continue
        kept.append(ch)
    return "".join(kept)


def clean_name(raw: str) -> str:
    """``raw`` as it is shown and stored: refused, cleaned and normalised as the module says.

    Leading and trailing whitespace goes. Raises :class:`UnsafeNameError` for a name with
    a character it refuses, an empty name, or one over :data:`MAX_NAME_LENGTH` characters.
    Folders are not dropped here (see :func:`safe_display_name`).
    """
    problem = _refusal(raw)
    if problem:
        raise UnsafeNameError(problem)
    name = unicodedata.normalize("NFC", _drop_invisible(raw)).strip()
    if name in {"", ".", ".."}:
        raise UnsafeNameError("the file has no name")
    if len(name) > MAX_NAME_LENGTH:
        raise UnsafeNameError(
            f"the file name is {len(name)} characters long; the limit is {MAX_NAME_LENGTH}"
        )
    return name


def safe_display_name(raw: str) -> str:
    """The base name of ``raw`` with any folders dropped, cleaned by :func:`clean_name`.

    Stored files are named by content hash, so a name never becomes a path; dropping
    folders (``../``) still keeps listings honest.
    """
    if "\x00" in raw:
        raise UnsafeNameError("the file name contains a NUL character")
    return clean_name(PureWindowsPath(PurePosixPath(raw).name).name)
