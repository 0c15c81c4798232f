"""Token-sized chunks that keep paragraphs and sentences whole where they can.

How a page is cut:

1. The page text is split into paragraphs (blank lines), paragraphs into sentences (``.``,
   ``!``, ``?`` followed by whitespace, or CJK ``。！？`` with no space needed). A sentence
   longer than ``chunk_size`` tokens is split into its lines, a line that is still too long
   into words (each CJK character counts as a word), and a word that is still too long
   (a URL, a base64 blob) into characters.
2. Those units are packed greedily into chunks of at most ``chunk_size`` tokens. A paragraph
   that does not fit in the room left but fits in a chunk of its own starts a new chunk, so
   short paragraphs are never cut.
3. A new chunk starts with whole trailing units of the previous one, up to ``chunk_overlap``
   tokens (none when that would push a paragraph that fits whole over the size).

Each unit's tokens are counted once, and a chunk's size is the sum of its units' counts;
for the WordPiece tokenizer of the bundled embedding model that is the count of the joined
text, since it splits on whitespace and punctuation first. Chunks never cross pages, and
``page.text[chunk.start:chunk.end] == chunk.text`` always holds.

A chunk also holds at most ``chunk_size * max_chars_per_token`` characters (32 by default:
7,680 for 240 tokens). Real text has 4 to 6 characters per token of the bundled model and
at most 25 per word of the approximate count (SQLite's long constant names), so the cap
never changes their chunks; it stops what a count cannot see (the model counts a run of
letters of any length as one unknown token, and whitespace as nothing). It also keeps the
work linear: a span longer than the cap is split without being counted, and a word is cut
by bisecting a window of that many characters (in a run longer than the cap, each piece
is aimed from the previous one and taken once it holds nine tenths of ``chunk_size``), so
each character is counted a bounded number of times (before, a 200 kB base64 line took
73 s, and the time grew with the square of its length). Units stream into the packer with
a paragraph's look-ahead at most, so memory stays within a chunk beside the chunks made.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from theflow import Param

from ragloom.base import BaseComponent
from ragloom.schema import Chunk, Page

__all__ = [
    "MAX_CHARS_PER_TOKEN",
    "TokenCounter",
    "TokenSplitter",
    "approximate_token_count",
    "sentence_spans",
]

logger = logging.getLogger(__name__)


class TokenCounter(Protocol):
    """Counts the tokens of a text, e.g. ``SentenceTransformerEmbeddings.count_tokens``."""

    def __call__(self, text: str, /) -> int:
        """The number of tokens in ``text`` (without special tokens)."""
        ...


# CJK symbols and punctuation, kana, CJK ideographs and full-width forms: scripts written
# without spaces, where every character is a word boundary.
_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(
    # The leading look-ahead lets the regex engine skip to the next mark instead of trying
    # the whole pattern at every character (a paragraph of 10 MB without one: 0.4 s holding
    # the GIL before, 0.1 s now; prose 2.4 times faster).
    r"(?=[.!?…。！？])(?:"
    # Latin-style: the end mark must be followed by a space. Matching starts at the first mark
    # of a run (the look-behind, after that mark, sees no mark before it) and never
    # backtracks (possessive), so a run of marks followed by a letter is rejected once, not
    # once per mark: "....x" used to be quadratic (25 s for 40 kB).
    r"[.!?…](?<![.!?…]{2})[.!?…]*+[\"'”’)\]»]*+(?=\s|$)"
    r"|[。！？]+[」』”’）\"']*"  # CJK: sentences follow each other without a space
    r")"
)
_LINE = re.compile(r"[^\n]+")
_SPACES = re.compile(r"\s*")
_WORD = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")
# The ideographic space (U+3000) is in the CJK range but is whitespace, not a token: counted,
# it made a chunk's count more than the sum of its units'.
_APPROX_TOKEN = re.compile(rf"(?!\s)[{_CJK}]|[^\W{_CJK}]+|[^\w\s]")


def approximate_token_count(text: str) -> int:
    """A rough token count: words, punctuation marks and CJK characters.

    Used when the splitter is given no tokenizer; pass the embedding model's own counter
    for chunks that match what the model sees.
    """
    return sum(1 for _ in _APPROX_TOKEN.finditer(text))


MAX_CHARS_PER_TOKEN = 32
"""Default of ``TokenSplitter.max_chars_per_token``; see the module docs."""


@dataclass(frozen=True, slots=True)
class _Unit:
    """A span of page text that is never cut further, with its token count."""

    start: int
    end: int
    tokens: int
    starts_paragraph: bool


class TokenSplitter(BaseComponent):
    """Splits pages into chunks of at most ``chunk_size`` tokens (see the module docs).

    A chunk is larger only when a single character counts as more than ``chunk_size``
    tokens, and never longer than ``chunk_size * max_chars_per_token`` characters. Chunk ids
    are ``f"{source_id}-{i:05d}"``, ``i`` counting from 0 over the file. Time and memory grow
    linearly with the text.
    """

    # 240/36: the best recall on the sotu benchmark among sizes the embedding model sees
    # whole (it embeds 254 tokens at most); see docs/performance.md.
    chunk_size: int = Param(240, help="Most tokens in a chunk.")
    chunk_overlap: int = Param(
        36, help="Most tokens of whole trailing sentences repeated at the start of the next chunk."
    )
    tokenizer: TokenCounter | None = Param(
        None,
        help="Counts tokens, e.g. embeddings.count_tokens; None for a rough word count.",
    )
    max_chars_per_token: int = Param(
        MAX_CHARS_PER_TOKEN,
        help="A chunk holds at most chunk_size times this many characters.",
    )

    def run(self, pages: Sequence[Page], source_id: str, source_name: str) -> list[Chunk]:
        """The chunks of ``pages`` in order, numbered over the whole file."""
        size, overlap = int(self.chunk_size), int(self.chunk_overlap)
        if size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {size}")
        if not 0 <= overlap < size:
            raise ValueError(f"chunk_overlap must be in [0, chunk_size), got {overlap}")
        per_token = int(self.max_chars_per_token)
        if per_token < 1:
            raise ValueError(f"max_chars_per_token must be at least 1, got {per_token}")
        count: TokenCounter = self.tokenizer or approximate_token_count
        cap = size * per_token

        chunks: list[Chunk] = []
        for page in pages:
            units = _units(page.text, count, size, cap)
            for start, end in _pack(units, size, overlap, cap, overlap * per_token):
                chunks.append(
                    Chunk(
                        id=f"{source_id}-{len(chunks):05d}",
                        text=page.text[start:end],
                        source_id=source_id,
                        source_name=source_name,
                        page=page.number,
                        start=start,
                        end=end,
                    )
                )
        logger.debug("%s: %d pages -> %d chunks", source_name, len(pages), len(chunks))
        return chunks


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """``start:end`` without leading and trailing whitespace (empty: ``start == end``)."""
    # In C rather than a loop over characters: 20 million spaces take 10 ms, not 1 s.
    # ``\s`` and ``str.isspace`` agree on every code point; ``\s*`` always matches.
    spaces = _SPACES.match(text, start, end)
    start = spaces.end() if spaces else start
    if start < end and text[end - 1].isspace():
        end = start + len(text[start:end].rstrip())
    return start, end


def _paragraphs(text: str) -> Iterator[tuple[int, int]]:
    start = 0
    for match in _PARAGRAPH_BREAK.finditer(text):
        span = _trim(text, start, match.start())
        if span[0] < span[1]:
            yield span
        start = match.end()
    span = _trim(text, start, len(text))
    if span[0] < span[1]:
        yield span


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text``, by the rule the splitter uses."""
    return list(_sentences(text, 0, len(text)))


def _sentences(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    cursor = start
    for match in _SENTENCE_END.finditer(text, start, end):
        span = _trim(text, cursor, match.end())
        if span[0] < span[1]:
            yield span
        cursor = match.end()
    span = _trim(text, cursor, end)
    if span[0] < span[1]:
        yield span


def _pieces(
    text: str, start: int, end: int, count: TokenCounter, size: int, cap: int, level: int = 0
) -> Iterator[tuple[int, int, int]]:
    """``(start, end, tokens)`` spans of at most ``size`` tokens and ``cap`` characters.

    They cover one sentence: ``level`` 0 is the sentence, 1 its lines, 2 their words; past
    that, characters. A span longer than ``cap`` could not be one piece whatever its count,
    so it is split without being counted.
    """
    if end - start <= cap:
        tokens = count(text[start:end])
        if tokens <= size:
            yield start, end, tokens
            return
    if level >= 2:
        yield from _cut_characters(text, start, end, count, size, cap)
        return
    pattern = _LINE if level == 0 else _WORD
    for match in pattern.finditer(text, start, end):
        sub_start, sub_end = _trim(text, match.start(), match.end())
        if sub_start < sub_end:
            yield from _pieces(text, sub_start, sub_end, count, size, cap, level + 1)


def _cut_characters(
    text: str, start: int, end: int, count: TokenCounter, size: int, cap: int
) -> Iterator[tuple[int, int, int]]:
    """Prefixes of at most ``size`` tokens and ``cap`` characters, one after the other.

    Each is the longest such prefix, found by bisecting a window of ``cap`` characters
    (bisecting the whole rest of a long run made each piece cost as much as the run). In a
    run longer than ``cap`` (base64, minified code, one letter repeated) pieces after the
    first are aimed from the previous one instead (:func:`_aim`), and one that holds nine
    tenths of ``size`` is taken: a count of the bundled model costs 1 ms per kB of base64,
    bisection counted 13 prefixes per piece, aiming counts 1 or 2.
    """
    previous: tuple[int, int] | None = None  # characters and tokens of the last piece
    while start < end:
        low, high = start + 1, min(end, start + cap)
        low_tokens: int | None = None
        if previous is not None and end - start > cap:
            low, low_tokens, high = _aim(text, start, high, previous, count, size)
        while low < high:
            middle = (low + high + 1) // 2
            tokens = count(text[start:middle])
            if tokens <= size:
                low, low_tokens = middle, tokens
            else:
                high = middle - 1
        # ``low`` is at least one character, even if that character alone is too big.
        tokens = count(text[start:low]) if low_tokens is None else low_tokens
        yield start, low, tokens
        previous = (low - start, tokens)
        start = low


# The first aim is at the previous piece's characters per token; a second one, after a
# miss, at 19/20 of the size. A piece holding at least 9/10 of the size is taken.
_AIM_AGAIN = (19, 20)
_ENOUGH = (9, 10)
_AIMS = 3


def _aim(
    text: str, start: int, high: int, previous: tuple[int, int], count: TokenCounter, size: int
) -> tuple[int, int | None, int]:
    """``(low, tokens of low, high)``: a piece's end found, or the range left to bisect.

    Prefix lengths are aimed in proportion to the tokens the last count gave (a secant
    step), starting from the previous piece's characters per token. ``low == high`` when
    a prefix holds enough tokens, or is the whole window and fits.
    """
    low, low_tokens = start + 1, None
    chars, tokens = previous
    target = size
    for _ in range(_AIMS):
        aimed = start + max(1, chars * target // max(tokens, 1))
        probe = max(low + 1, min(high, aimed))
        if probe > high:
            break
        tokens = count(text[start:probe])
        if tokens <= size:
            low, low_tokens = probe, tokens
            if probe == high or tokens * _ENOUGH[1] >= size * _ENOUGH[0]:
                return probe, tokens, probe
        else:
            high = probe - 1
        chars, target = probe - start, size * _AIM_AGAIN[0] // _AIM_AGAIN[1]
    return low, low_tokens, high


def _units(text: str, count: TokenCounter, size: int, cap: int) -> Iterator[_Unit]:
    for para_start, para_end in _paragraphs(text):
        first = True
        for sent_start, sent_end in _sentences(text, para_start, para_end):
            for start, end, tokens in _pieces(text, sent_start, sent_end, count, size, cap):
                yield _Unit(start, end, tokens, first)
                first = False


def _with_paragraphs(
    units: Iterable[_Unit], size: int, cap: int
) -> Iterator[tuple[_Unit, tuple[int, int] | None]]:
    """Each unit, with ``(tokens, end)`` of its paragraph if it starts one that fits a chunk.

    Fitting means at most ``size`` tokens and ``cap`` characters. The look-ahead holds one
    paragraph's units only while they still fit, so memory stays within a chunk.
    """
    pending: list[_Unit] = []  # the units so far of a paragraph that may still fit
    tokens = 0
    for unit in units:
        if unit.starts_paragraph:
            yield from _released(pending, tokens)
            pending, tokens = [unit], unit.tokens
        elif pending:
            pending.append(unit)
            tokens += unit.tokens
        else:
            yield unit, None
            continue
        if tokens > size or unit.end - pending[0].start > cap:
            yield from ((u, None) for u in pending)
            pending = []
    yield from _released(pending, tokens)


def _released(pending: list[_Unit], tokens: int) -> Iterator[tuple[_Unit, tuple[int, int] | None]]:
    """The units of a whole paragraph that fits, the first with the paragraph's size."""
    for i, unit in enumerate(pending):
        yield unit, (tokens, pending[-1].end) if i == 0 else None


def _pack(
    units: Iterable[_Unit], size: int, overlap: int, cap: int, overlap_cap: int
) -> Iterator[tuple[int, int]]:
    """Greedy packing of ``units`` into ``(start, end)`` chunk spans (see the module docs).

    The overlap repeats at most ``overlap`` tokens and ``overlap_cap`` characters: units
    the tokenizer counts as nothing (combining marks, for the bundled model) would otherwise
    all be repeated, and each chunk would then move on by a unit or two.
    """
    current: list[_Unit] = []
    tokens = 0
    carried = 0  # leading units of ``current`` repeated from the previous chunk
    for unit, paragraph in _with_paragraphs(units, size, cap):
        # A paragraph that fits a chunk is placed whole; any other unit by itself.
        need_tokens, need_end = paragraph or (unit.tokens, unit.end)
        if len(current) > carried and (
            tokens + need_tokens > size or need_end - current[0].start > cap
        ):
            yield current[0].start, current[-1].end
            # Room for the overlap is what the next unit (or whole paragraph) leaves.
            current = _tail(current, min(overlap, size - need_tokens), overlap_cap)
            while current and need_end - current[0].start > cap:
                del current[0]
            carried = len(current)
            tokens = sum(u.tokens for u in current)
        current.append(unit)
        tokens += unit.tokens
    if len(current) > carried:
        yield current[0].start, current[-1].end


def _tail(units: list[_Unit], budget: int, chars: int) -> list[_Unit]:
    """The longest run of trailing ``units`` of at most ``budget`` tokens and ``chars``."""
    taken = 0
    first = len(units)
    while (
        first > 0
        and taken + units[first - 1].tokens <= budget
        and units[-1].end - units[first - 1].start <= chars
    ):
        first -= 1
        taken += units[first].tokens
    return units[first:]
