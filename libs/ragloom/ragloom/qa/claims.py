"""The specifics a sentence claims, and whether a text holds them: pure string work.

A specific is what can be looked up verbatim (:data:`~ragloom.grounding_report.SpecificKind`):
numbers, versions, code identifiers, options and quoted phrases. Each comes with its
*keys*, normalised forms of which a text must hold one:

- numbers by value: ``5.0`` ≡ ``5``, ``1,000,000`` ≡ ``1000000`` ≡ ``10**6`` ≡ ``10^6`` ≡
  ``1e6`` ≡ ``1 million``; ``66%`` is held by ``66%``, ``66 percent`` or ``0.66``; a text's
  numbers written in words (``sixty-four``, ``two thousand``, ``third``) count too; as
  typeset, ``−5`` (a minus sign) ≡ ``-5`` and ``12 345`` (a no-break or thin space) ≡
  ``12,345``; digits grouped by plain spaces are read as one number or as several;
- versions as written, a trailing ``.0`` optional (``3.35.0`` ≡ ``3.35``), and a text's
  ``3.35.5`` holds ``3.35``;
- identifiers and quoted phrases as whole words, case-insensitively (``carray()`` is held
  by ``carray``; a quote's punctuation and spacing are ignored), words as search compares
  them (:mod:`ragloom.words`: with their combining marks, Arabic vowel marks aside, CJK
  and Thai text a character at a time, so that a quoted word is found inside a run);
- options exactly (``-x`` is not ``-X``); ``PRAGMA foo`` by the word ``pragma`` and ``foo``.

Plain words, names of people and numbers written in words in the answer are not
specifics: this finds invented values and names, not wrong meaning.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cached_property

from ragloom.grounding_report import Specific, SpecificKind
from ragloom.words import HAS_UNSPACED, combining_marks, fold, fold_marked, words

__all__ = ["Claim", "TextHolder", "claims_of", "normalise_text"]

_MAX_QUOTE = 300  # longest quoted phrase, in characters; a longer "quote" is prose
_MAX_DIGITS = 40  # numbers longer than this are compared as written, not by value
_QUOTES = [
    re.compile(rf'"([^"\n]{{1,{_MAX_QUOTE}}})"'),
    re.compile(rf"“([^”\n]{{1,{_MAX_QUOTE}}})”"),
    re.compile(rf"‘([^’\n]{{1,{_MAX_QUOTE}}})’"),
    re.compile(rf"`([^`\n]{{1,{_MAX_QUOTE}}})`"),
    # Single quotes only around words: "it's" and "users'" are no quotes.
    re.compile(rf"(?<!\w)'([^'\n]{{1,{_MAX_QUOTE}}}?)'(?!\w)"),
]
_VERSION = re.compile(r"(?<![\w.])[vV]?(\d+(?:\.\d+){2,})(?!\w)(?!\.\d)")
_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>-)?(?:"
    r"(?P<hex>0[xX][0-9a-fA-F]{1,16})"
    r"|(?P<base>\d{1,6})\s?(?:\*\*|\^)\s?(?P<exp>\d{1,3})"
    r"|(?P<plain>(?:\d{1,3}(?:,\d{3})+|\d{1,3}(?: \d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d{1,3})?)"
    r")(?!\.?\d)"
    r"(?P<pct>\s?%|\s(?:percent|per cent)\b)?"
    r"(?P<scale>\s(?:thousand|million|billion|trillion)\b)?"
)
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
# How numbers are typeset, read before NFKC folds these spaces into plain ones: a minus
# sign (U+2212) is "-"; digits grouped in threes by a no-break, narrow no-break, thin or
# figure space (12 345) are one number, since those spaces only ever join. A plain space
# may also part two numbers ("scores of 95 100 and 87"), so digits grouped by plain spaces
# are read both ways: as a claim, held by the one number or by each group, every one of
# them (an "ns:" key); in a text, as the number and as each group.
_MINUS = str.maketrans({"\u2212": "-"})
_TIGHT_GROUPS = re.compile(r"(?<![\d,.])\d{1,3}(?:[\u00a0\u202f\u2009\u2007]\d{3})+(?!\d)")
_TIGHT_SPACE = re.compile(r"[\u00a0\u202f\u2009\u2007]")
_PRAGMA = re.compile(r"\bPRAGMA\s+(?:\w+\.)?([A-Za-z_]\w*)")
_FLAG = re.compile(r"(?<![\w-])(?:--[A-Za-z0-9]|-[A-Za-z])(?:[\w-]*\w)?")
_IDENTIFIERS = [
    re.compile(r"\b([A-Za-z_]\w*)\((?!s\))"),  # a call: carray(), json_extract(X
    re.compile(r"(?<![\w.])\.[a-z][a-z_]*\b"),  # a CLI dot-command: .recover
    re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b"),  # dotted: os.path, flowsettings.py
    re.compile(r"\b_*[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+_*\b"),  # snake_case, SQLITE_MAX_X
    re.compile(r"\b[A-Za-z]+\d[A-Za-z0-9]*\b"),  # letters then digits: int32, fts5
    re.compile(r"\b[a-z]+(?:[A-Z][a-z0-9]*)+\b"),  # camelCase: xRandomness
    re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+\b"),  # inner capitals: ChaCha
    re.compile(r"\b[A-Z]{2,}[a-z]\w*\b"),  # SQLite
    re.compile(r"\b[A-Z][A-Z0-9]{2,}\b"),  # upper case: NUMERIC, WAL
]
_WORD_NUMBERS = {
    word: value
    for value, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
        ]
    )
}
_TENS = {
    w: 10 * (i + 2)
    for i, w in enumerate(
        ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
    )
}
_ORDINALS = {
    word: value
    for value, word in enumerate(
        ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"], 1
    )
}
_NUMBER_WORDS = re.compile(
    r"\b(?:(" + "|".join(_TENS) + r")(?:[- ](" + "|".join(_WORD_NUMBERS) + r"))?"
    r"|(" + "|".join([*_ORDINALS, *_WORD_NUMBERS]) + r"))"
    r"(?:[- ](hundred|thousand|million|billion|trillion))?\b"
)


@dataclass(frozen=True)
class Claim:
    """A specific and the normalised keys of which a supporting text holds one."""

    specific: Specific
    keys: frozenset[str]


def _typeset(text: str) -> str:
    """``text`` with its minus signs as "-" and digits grouped by no-break or thin spaces
    grouped by commas instead (as many characters: positions stay)."""
    text = text.translate(_MINUS)
    return _TIGHT_GROUPS.sub(lambda m: _TIGHT_SPACE.sub(",", m.group(0)), text)


def normalise_text(text: str) -> str:
    """``text`` as its words one space apart, as search compares them
    (:func:`ragloom.words.words`: NFKC, case-folded, with their combining marks but not
    Arabic vowel marks; CJK, Thai and other text without spaces a character with its marks
    a word, so that a phrase is found inside a longer run)."""
    return " ".join(words(text))


@functools.cache
def _token_pattern(marked: bool) -> re.Pattern[str]:
    """A word or dotted name (``os.path``, ``.recover``); ``marked``: its words may hold
    combining marks (:func:`ragloom.words.fold_marked`), which ``\\w`` leaves out."""
    word = rf"\w+(?:{combining_marks()}+\w*)*" if marked else r"\w+"
    return re.compile(rf"\.?{word}(?:\.{word})*")


def _number_key(value: Decimal) -> str:
    value = value.normalize()
    if value == 0:
        return "n:0"
    if value == value.to_integral_value() and value.adjusted() <= _MAX_DIGITS:
        return f"n:{value:f}"
    return f"n:{value}"


def _number_keys(match: re.Match[str], holder: bool = False) -> frozenset[str] | None:
    """The keys of a number match, or ``None`` when it is no number after all; digits
    grouped by plain spaces also read as separate numbers (see ``_MINUS``), which a text
    (``holder``) holds each of, and a claim is held by all of."""
    keys: set[str] = set()
    try:
        if match["hex"]:
            value = Decimal(int(match["hex"], 16))
        elif match["base"]:
            value = Decimal(int(match["base"]) ** int(match["exp"]))
        else:
            if " " in match["plain"]:
                keys |= _spaced_keys(match["sign"] or "", match["plain"].split(" "), holder)
            plain = match["plain"].replace(",", "").replace(" ", "")
            if len(plain) > _MAX_DIGITS:
                return frozenset({f"n:{plain}"})
            value = Decimal(plain)
    except (InvalidOperation, ValueError):
        return None
    if match["sign"]:
        value = -value
    if match["scale"]:
        value *= _SCALES[match["scale"].strip()]
    keys.add(_number_key(value))
    if match["pct"]:
        keys.add(_number_key(value / 100))
    plain = match["plain"] or ""
    if plain.count(".") == 1 and not {",", " "} & set(plain) and "e" not in plain.lower():
        # 3.40 as a version too: held by 3.40 and 3.40.0, and as a series by 3.40.1.
        keys.update({f"v:{plain}", f"vp:{plain}"})
    return frozenset(keys)


def _spaced_keys(sign: str, groups: list[str], holder: bool) -> set[str]:
    """The keys of digit groups parted by plain spaces read as separate numbers: each
    group's for a text; for a claim, one key held only where every group is."""
    try:
        values = [_number_key(Decimal(sign + groups[0]))]
        values += [_number_key(Decimal(group)) for group in groups[1:]]
    except InvalidOperation:
        return set()
    if holder:
        return set(values)
    return {"ns:" + "|".join(value.removeprefix("n:") for value in values)}


def _version_keys(version: str, holder: bool) -> frozenset[str]:
    """A version's keys; a text (``holder``) also holds each shorter prefix of it as a
    series (``3.35.5`` holds the series ``3.35``, not the version ``3.35.0``)."""
    parts = version.split(".")
    keys = {f"v:{version}"}
    trimmed = list(parts)
    while len(trimmed) > 2 and trimmed[-1].strip("0") == "":
        trimmed.pop()
        keys.add(f"v:{'.'.join(trimmed)}")
    if holder:
        keys.update(f"vp:{'.'.join(parts[:n])}" for n in range(2, len(parts) + 1))
    return frozenset(keys)


class _Masked:
    """A sentence whose already-claimed characters later patterns may not reuse (a mask
    of the sentence: each check costs the length of its match, not the claims so far)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.taken = bytearray(len(text))

    def free(self, start: int, end: int) -> bool:
        return not any(self.taken[start:end])

    def take(self, start: int, end: int) -> None:
        self.taken[start:end] = b"\x01" * (end - start)


def _quote_claims(masked: _Masked) -> list[tuple[int, Claim]]:
    found: list[tuple[int, Claim]] = []
    for pattern in _QUOTES:
        for match in pattern.finditer(masked.text):
            inner = match.group(1).strip()
            if not any(ch.isalnum() for ch in inner) or not masked.free(*match.span()):
                continue
            masked.take(*match.span())
            # A word of CJK or Thai text is looked for as a phrase: it may be inside a run.
            single = re.fullmatch(r"[\w.]+(?:\(\))?", inner) and not HAS_UNSPACED.search(inner)
            key = f"w:{fold(inner.removesuffix('()'))}" if single else None
            kind: SpecificKind = "identifier" if single else "quote"
            keys = frozenset({key or f"q:{normalise_text(inner)}"})
            found.append((match.start(), Claim(Specific(inner, kind), keys)))
    return found


def claims_of(sentence: str, limit: int) -> tuple[list[Claim], int]:
    """The specifics ``sentence`` claims (its ``[n]`` marks removed beforehand), in order
    of appearance, at most ``limit`` of them, each once; and how many more were left out."""
    masked = _Masked(unicodedata.normalize("NFKC", _typeset(sentence)))
    found = _quote_claims(masked)

    def add(start: int, end: int, specific: Specific, keys: frozenset[str]) -> None:
        if masked.free(start, end):
            masked.take(start, end)
            found.append((start, Claim(specific, keys)))

    for match in _PRAGMA.finditer(masked.text):
        key = frozenset({f"p:{match.group(1).casefold()}"})
        add(*match.span(), Specific(match.group(0), "option"), key)
    for match in _FLAG.finditer(masked.text):
        add(*match.span(), Specific(match.group(0), "option"), frozenset({f"o:{match.group(0)}"}))
    for match in _VERSION.finditer(masked.text):
        keys = _version_keys(match.group(1), holder=False)
        add(*match.span(), Specific(match.group(0), "version"), keys)
    for index, pattern in enumerate(_IDENTIFIERS):
        for match in pattern.finditer(masked.text):
            name = match.group(1) if index == 0 else match.group(0)
            if index == 2 and all(len(part) < 2 for part in name.split(".")):
                continue  # e.g, i.e
            text = f"{name}()" if index == 0 else name
            key = frozenset({f"w:{name.casefold()}"})
            add(*match.span(), Specific(text, "identifier"), key)
    for match in _NUMBER.finditer(masked.text):
        values = _number_keys(match)
        if values is not None:
            add(*match.span(), Specific(match.group(0).strip(), "number"), values)
    ordered = [claim for _, claim in sorted(found, key=lambda item: item[0])]
    first: dict[str, Claim] = {}
    for claim in ordered:  # each specific once, where it first appears
        first.setdefault(claim.specific.text, claim)
    unique = list(first.values())
    return unique[:limit], max(0, len(unique) - limit)


class TextHolder:
    """A text (a passage, the question, a tool's result) to look specifics up in."""

    def __init__(self, text: str) -> None:
        self.raw = unicodedata.normalize("NFKC", _typeset(text))

    @cached_property
    def _words(self) -> str:
        return f" {normalise_text(self.raw)} "

    @cached_property
    def _tokens(self) -> frozenset[str]:
        """Every word and dotted name, folded, with the parts of each dotted one."""
        tokens: set[str] = set()
        text, marked = fold_marked(self.raw)
        for token in _token_pattern(marked).findall(text):
            tokens.add(token)
            if "." in token:
                parts = token.lstrip(".").split(".")
                tokens.update(parts)
                tokens.update(f".{part}" for part in parts)
        return frozenset(tokens)

    @cached_property
    def _flags(self) -> frozenset[str]:
        return frozenset(_FLAG.findall(self.raw))

    @cached_property
    def _values(self) -> frozenset[str]:
        keys: set[str] = set()
        for match in _VERSION.finditer(self.raw):
            keys |= _version_keys(match.group(1), holder=True)
        for match in _NUMBER.finditer(self.raw):
            keys |= _number_keys(match, holder=True) or set()
        for match in _NUMBER_WORDS.finditer(self.raw.casefold()):
            tens, unit, alone, scale = match.groups()
            word = unit or alone or ""
            value = _TENS.get(tens or "", 0) + _WORD_NUMBERS.get(word, _ORDINALS.get(word, 0))
            if scale:
                value *= 100 if scale == "hundred" else _SCALES[scale]
            keys.add(_number_key(Decimal(value)))
        return frozenset(keys)

    def holds(self, key: str) -> bool:
        """Whether the text holds the normalised specific ``key`` (set look-ups, except
        a quoted phrase: a search of the text's words)."""
        kind, _, value = key.partition(":")
        if kind in ("n", "v", "vp"):
            return key in self._values
        if kind == "ns":  # digit groups read as separate numbers: each must be held
            return all(f"n:{part}" in self._values for part in value.split("|"))
        if kind == "w":
            return value in self._tokens
        if kind == "q":
            return f" {value} " in self._words
        if kind == "p":
            return "pragma" in self._tokens and value in self._tokens
        return value in self._flags
