"""Plain text and Markdown files, in whatever encoding they were saved.

UTF-8 (with or without a byte-order mark) and BOM-marked UTF-16/32 are decoded directly;
anything else goes to charset-normalizer. Binary files renamed to ``.txt`` are refused.
"""

from __future__ import annotations

import codecs
import logging
import re
from pathlib import Path

import charset_normalizer

from ragloom.loaders.base import EmptyDocumentError, TextBudget, UnreadableFileError, read_bytes
from ragloom.schema import Page

__all__ = ["TextReader", "decode_text", "text_codec"]

logger = logging.getLogger(__name__)

# UTF-32 first: its little-endian mark starts with UTF-16's.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

# On short files charset-normalizer often ties many code pages at zero "chaos" and then
# picks an obscure one (cp1006 for "café"); among near-ties we prefer the encodings real
# files are usually saved in.
_PREFERRED_ENCODINGS: tuple[str, ...] = (
    "cp1252",
    "gb18030",
    "cp932",
    "shift_jis",
    "big5",
    "cp949",
    "euc_kr",
    "cp1251",
    "cp1250",
    "cp1253",
    "cp1254",
    "cp1255",
    "cp1256",
    "cp1257",
    "euc_jp",
    "koi8_r",
    "latin_1",
    "iso8859_15",
)
# 0.03: "Le café était très élégant." scores 0.035 as mac_latin2 and 0.053 as cp1252.
_CHAOS_TIE = 0.03
_COHERENCE_TIE = 0.1

# Codecs Python knows by a name a file may declare that are no character set of text
# files: UTF-7 and the escape codecs turn ASCII ("+2AA-", "\\ud800") into lone surrogates,
# which no encoder (lxml's feed included) accepts; "undefined" raises UnicodeError on any
# bytes; IDNA and Punycode encode host names. (Codecs such as base64 are refused by being
# no text encoding at all.) Browsers know none of these as a page's charset either.
_NOT_CHARSETS = frozenset(
    {"utf-7", "unicode-escape", "raw-unicode-escape", "undefined", "idna", "punycode"}
)

# Text files have tabs, newlines and form feeds (\t-\r); a high share of the other C0/C1
# control characters means binary data that happened to decode.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_MAX_CONTROL_SHARE = 0.05


class TextReader:
    """Reads ``.txt`` and ``.md`` files into one :class:`Page` (``number`` is ``None``).

    Newlines are normalised to ``\\n`` and a byte-order mark is dropped; nothing else is
    changed, so offsets into the page text stay meaningful to the user. A text file gives at
    most one character per byte, so only ``budget.max_chars`` can refuse it.
    """

    extensions: tuple[str, ...] = (".txt", ".md", ".markdown")

    def __init__(self, budget: TextBudget | None = None) -> None:
        self.budget = budget or TextBudget()

    def read(self, path: Path) -> list[Page]:
        """The text of ``path`` as a single page; raises a ``LoaderError`` if there is none."""
        data = read_bytes(path)
        text = text_of(data, path)
        self.budget.meter(len(data), "text file", path).add(len(text))
        return [Page(text=text, number=None)]


def text_of(data: bytes, path: Path) -> str:
    """``data`` (a whole file) decoded as text; refuses binary content or blank text."""
    text = decode_text(data, path)
    if not text.strip():
        raise EmptyDocumentError("the file has no text, only whitespace", path)
    return text


def decode_text(data: bytes, path: Path | None = None, *, encoding: str | None = None) -> str:
    """Decode ``data`` as text with normalised newlines, or raise ``UnreadableFileError``.

    ``path`` only names the file in errors and logs. ``encoding`` is what the file says about
    itself (an HTML ``<meta charset>``): a byte-order mark still wins over it, and when the
    data does not decode with it (or Python does not know it) detection decides instead.
    """
    text = _decode(data, path, encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    if _looks_binary(text):
        raise UnreadableFileError("binary content, not text", path)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _decode(data: bytes, path: Path | None, declared: str | None) -> str:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError as exc:
                raise UnreadableFileError(f"invalid {encoding} text: {exc.reason}", path) from exc
    # Without a UTF-16/32 mark a NUL byte does not occur in text; checking it first also
    # keeps charset-normalizer from "decoding" images as UTF-16.
    if b"\x00" in data:
        raise UnreadableFileError("binary content, not text", path)
    if declared is not None:
        text = _decode_declared(data, declared, path)
        if text is not None:
            return text
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    charset, detected = _detect(data)
    if detected is None:
        raise UnreadableFileError("binary content, not text", path)
    logger.info("%s: not UTF-8, decoded as %s", path.name if path else "text", charset)
    return detected


def text_codec(label: str) -> str | None:
    """The Python codec a declared charset ``label`` names (``"utf_16"`` and ``"UTF16"``
    are ``"utf-16"``), or ``None`` for a label that names no character set of text: an
    unknown one, a codec that is no text encoding (base64), or one of :data:`_NOT_CHARSETS`.
    """
    try:
        info = codecs.lookup(label)
    except (LookupError, TypeError, ValueError):  # ValueError: a label with a NUL in it
        return None
    # _is_text_encoding is False for the bytes-to-bytes and str-to-str codecs (base64,
    # rot13); str.decode refuses them, but only once it is called.
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_CHARSETS:
        return None
    return info.name


def _decode_declared(data: bytes, declared: str, path: Path | None) -> str | None:
    """``data`` decoded with the encoding the file declares, or ``None`` if that fails or
    the label names no character set of text (:func:`text_codec`)."""
    name = path.name if path else "text"
    codec = text_codec(declared)
    if codec is None:
        logger.info("%s: declares an unknown encoding %r, detecting instead", name, declared)
        return None
    try:
        return data.decode(codec)
    except UnicodeError:
        # Files are often saved in another encoding than their header claims. (Any
        # UnicodeError: a codec may raise its base class rather than UnicodeDecodeError.)
        logger.info("%s: does not decode as its declared %s, detecting instead", name, codec)
    return None


def _detect(data: bytes) -> tuple[str | None, str | None]:
    matches = list(charset_normalizer.from_bytes(data))
    if not matches:
        return None, None
    least_chaos = min(m.chaos for m in matches)
    tied = [m for m in matches if m.chaos <= least_chaos + _CHAOS_TIE]
    best_coherence = max(m.coherence for m in tied)
    tied = [m for m in tied if m.coherence >= best_coherence - _COHERENCE_TIE]

    def rank(match: charset_normalizer.CharsetMatch) -> int:
        if match.encoding in _PREFERRED_ENCODINGS:
            return _PREFERRED_ENCODINGS.index(match.encoding)
        return len(_PREFERRED_ENCODINGS)

    # min() keeps the first of equal ranks, i.e. charset-normalizer's own order.
    best = min(tied, key=rank)
    return best.encoding, str(best)


def _looks_binary(text: str) -> bool:
    if not text:
        return False
    controls = sum(1 for _ in _CONTROL_CHARS.finditer(text))
    return controls / len(text) > _MAX_CONTROL_SHARE
