"""What counts as a word, and the form words are compared in.

Search (the BM25 tokenizer of both full-text stores), the check of a question's terms
before answering and grounding (quotes, citations) share these rules, so that a word one
of them finds is found by the others.

- A word is a run of word characters (``\\w``) with the combining marks (Unicode
  categories Mn, Mc, Me) that follow them. Python's ``\\w`` leaves marks out, which would
  cut पानी ("water") into प and न at its vowel signs, and Bengali, Tamil, Arabic with
  vowel marks and other scripts likewise. A mark with no word character before it is no
  word.
- Words are compared folded (:func:`fold`): NFKC, case-folded, and without the marks that
  writers of one word put in or leave out: Arabic vowel marks (harakat) and tatweel,
  Hebrew points, variation selectors, and the dot above that case folding leaves of
  Turkish İ (İstanbul -> i + U+0307 + stanbul). Indic vowel signs and viramas stay: they
  make another word (पति "husband", पिता "father", पता "address").
- Some scripts put no spaces between words: CJK, and Thai, Lao, Khmer and Myanmar. Their
  runs are read as *units*, a base character with the marks after it (about a grapheme
  cluster, without Unicode's rules for stacked consonants), so that a vowel sign or tone
  mark is never parted from its consonant nor matched on its own.

The mark tables come from this Python's :mod:`unicodedata`, the database ``\\w``, NFKC
and case folding use too, so the rules agree with each other in every Python version.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

__all__ = [
    "CJK",
    "HAS_UNSPACED",
    "SOUTHEAST_ASIAN",
    "combining_marks",
    "fold",
    "fold_marked",
    "terms",
    "units",
    "words",
    "words_at",
]

#: Han, Hiragana, Katakana (with its extensions and halfwidth forms), Hangul, and the
#: ideographic marks 々 and 〇, as a regex class body.
CJK = (
    "\u1100-\u11ff\u3005\u3007\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0003134f"
)
# Thai, Lao, Myanmar (and its Extended-A and -B), Khmer (and Khmer Symbols): the blocks.
_SOUTHEAST_ASIAN_BLOCKS = (
    (0x0E00, 0x0EFF),
    (0x1000, 0x109F),
    (0x1780, 0x17FF),
    (0x19E0, 0x19FF),
    (0xA9E0, 0xA9FF),
    (0xAA60, 0xAA7F),
)
#: Thai, Lao, Khmer and Myanmar, as a regex class body.
SOUTHEAST_ASIAN = "".join(f"{chr(first)}-{chr(last)}" for first, last in _SOUTHEAST_ASIAN_BLOCKS)
#: Finds a character of a script written without spaces between words.
HAS_UNSPACED = re.compile(f"[{CJK}{SOUTHEAST_ASIAN}]")
_ASCII_WORD = re.compile(r"\w+")

# Marks a writer may put in or leave out of the same word. Arabic: tanwin, short vowels,
# shadda and sukun (U+064B-0652), the small vowel signs after them and the superscript
# alef, Quranic annotation marks, and tatweel, a stretch of the line that justifies text
# (a letter, not a mark). Hamza and madda (U+0653-0655) stay: they are spelling, and
# NFKC joins them with their letter anyway. Hebrew: cantillation, vowel points and the
# shin and sin dots. U+0307: case folding writes İ as i + U+0307, and İstanbul is
# written Istanbul and istanbul too. Variation selectors pick a glyph, not a word.
_OPTIONAL_MARKS = re.compile(
    "[\u0307\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\u0610-\u061a\u0640"
    "\u064b-\u0652\u0656-\u065f\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed"
    "\ufe00-\ufe0f\U000e0100-\U000e01ef]+"
)


def fold(text: str) -> str:
    """``text`` in the form words are compared in: NFKC, case-folded, without the marks a
    writer may leave out (see the module docstring). ASCII text is only case-folded."""
    return fold_marked(text)[0]


def fold_marked(text: str) -> tuple[str, bool]:
    """:func:`fold`'s text, and whether combining marks are left in it (which patterns to
    match it with: those without marks are faster)."""
    if text.isascii():  # nothing to normalise or strip: the common case, kept fast
        return text.casefold(), False
    text = unicodedata.normalize("NFKC", text).casefold()
    # One scan finds no mark in most text (Latin is composed by NFKC); only text with
    # marks pays for the second. Stripped after case folding, which leaves İ's U+0307.
    if _maybe_mark().search(text) is None:
        return text, False
    text = _OPTIONAL_MARKS.sub("", text)
    return text, _has_marks(text)


def _has_marks(text: str) -> bool:
    """Whether ``text`` holds a combining mark (slower than :func:`fold_marked`'s test)."""
    return _mark().search(text) is not None


@functools.cache
def _mark_ranges() -> tuple[str, str]:
    """The combining marks (Mn, Mc, Me) of this Python's Unicode as two class bodies: in
    the Basic Multilingual Plane, and past it. Read from :mod:`unicodedata` once, on first
    use (about 0.1 s): only text that is not ASCII needs them."""
    basic: list[str] = []
    astral: list[str] = []
    start = None
    for code in range(sys.maxunicode + 2):  # one past the end closes the last range
        mark = code <= sys.maxunicode and unicodedata.category(chr(code))[0] == "M"
        if mark and start is None:
            start = code
        elif not mark and start is not None:
            ranges = basic if start <= 0xFFFF else astral  # no range spans both
            ranges.append(f"{chr(start)}-{chr(code - 1)}" if code - 1 > start else chr(start))
            start = None
    return "".join(basic), "".join(astral)


@functools.cache
def combining_marks() -> str:
    """A regex matching one combining mark.

    ``re`` looks a class of characters of the Basic Multilingual Plane up in a table, but
    tries the ranges past it one by one at every character: the 100 or so ranges of marks
    there are only tried at a character past it."""
    basic, astral = _mark_ranges()
    return f"(?:[{basic}]|(?=[\U00010000-\U0010ffff])[{astral}])"


@functools.cache
def _mark() -> re.Pattern[str]:
    return re.compile(combining_marks())


@functools.cache
def _maybe_mark() -> re.Pattern[str]:
    """Any mark, tatweel, or any character past the Basic Multilingual Plane: one table
    look-up a character, so text without marks is told apart at the cost of one scan."""
    return re.compile(f"[{_mark_ranges()[0]}\u0640\U00010000-\U0010ffff]")


@functools.cache
def _southeast_asian_letters() -> str:
    """The word characters of :data:`SOUTHEAST_ASIAN` (not its punctuation) as a class body."""
    return "".join(
        chr(code)
        for first, last in _SOUTHEAST_ASIAN_BLOCKS
        for code in range(first, last + 1)
        if chr(code).isalnum()  # what \w matches, but for "_", which is not in them
    )


def _run_of(letters: str, marked: bool) -> str:
    """A run of ``letters`` (a class body), with the marks after each when ``marked``.

    L+(?:M+L*)*: L and M never overlap, so the match cannot backtrack badly; the pattern
    without marks is kept for text that has none, as it is twice as fast."""
    if not marked:
        return f"{letters}+"
    return f"{letters}+(?:{combining_marks()}+{letters}*)*"


def _word(marked: bool) -> str:
    return _run_of(f"[^\\W{CJK}{SOUTHEAST_ASIAN}]", marked)


@functools.cache
def _word_pattern(marked: bool) -> re.Pattern[str]:
    return re.compile(_word(marked))


@functools.cache
def _word_or_run_pattern(marked: bool) -> re.Pattern[str]:
    """A run of a script written without spaces (group 1), or a word (no group)."""
    runs = [_run_of(f"[{CJK}]", marked), _run_of(f"[{_southeast_asian_letters()}]", marked)]
    return re.compile(f"({'|'.join(runs)})|{_word(marked)}")


@functools.cache
def _unit_or_word_pattern(marked: bool) -> re.Pattern[str]:
    unit = f"[{CJK}{_southeast_asian_letters()}]"
    if marked:
        unit += f"{combining_marks()}*"
    return re.compile(f"{unit}|{_word(marked)}")


@functools.cache
def _unit_pattern() -> re.Pattern[str]:
    return re.compile(f"(?s).{combining_marks()}*")


def units(run: str, marked: bool) -> list[str]:
    """The units of a run of a script written without spaces: each character with the
    marks after it ("เป็น" -> "เ", "ป็", "น"); ``marked``: the run may hold marks."""
    return _unit_pattern().findall(run) if marked else list(run)


def terms(text: str, stopwords: frozenset[str] = frozenset()) -> list[str]:
    """The search terms of ``text``: its folded words other than ``stopwords``, and each
    run of a script written without spaces as overlapping bigrams of its units, a lone
    unit as itself (such a run has no words to split on; bigrams need no dictionary)."""
    if text.isascii():  # fast path: most text, one regex pass
        return [w for w in _ASCII_WORD.findall(text.casefold()) if w not in stopwords]
    text, marked = fold_marked(text)
    if HAS_UNSPACED.search(text) is None:
        return [w for w in _word_pattern(marked).findall(text) if w not in stopwords]
    found: list[str] = []
    for match in _word_or_run_pattern(marked).finditer(text):
        run = match.group(1)
        if run is None:
            if match.group(0) not in stopwords:
                found.append(match.group(0))
            continue
        parts = units(run, marked)
        if len(parts) == 1:
            found.append(run)
        else:
            found.extend(parts[i] + parts[i + 1] for i in range(len(parts) - 1))
    return found


def words(text: str) -> list[str]:
    """The folded words of ``text``, a script written without spaces unit by unit: what
    grounding compares a quote by (a phrase is held where its words occur in a row)."""
    folded, marked = fold_marked(text)
    return _unit_or_word_pattern(marked).findall(folded)


def words_at(text: str) -> list[tuple[str, int, int]]:
    """:func:`words`, each with its start and end in ``text`` itself (not folded)."""
    marked = not text.isascii() and _maybe_mark().search(text) is not None
    found = []
    for match in _unit_or_word_pattern(marked).finditer(text):
        word = fold(match.group())
        if word:  # a lone tatweel folds to nothing
            found.append((word, match.start(), match.end()))
    return found
