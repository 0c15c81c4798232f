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
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from theflow import Param

from ragloom.base import BaseComponent
from ragloom.schema import Chunk, Page

__all__ = ["TokenCounter", "TokenSplitter", "approximate_token_count", "sentence_spans"]

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
    r"[.!?…]+[\"'”’)\]»]*(?=\s|$)"  # Latin-style: the end mark must be followed by a space
    r"|[。！？]+[」』”’）\"']*"  # CJK: sentences follow each other without a space
)
_LINE = re.compile(r"[^\n]+")
_WORD = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")
_APPROX_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]")


def approximate_token_count(text: str) -> int:
    """A rough token count: words, punctuation marks and CJK characters.

    Used when the splitter is given no tokenizer; pass the embedding model's own counter
    for chunks that match what the model sees.
    """
    return sum(1 for _ in _APPROX_TOKEN.finditer(text))


@dataclass(frozen=True, slots=True)
class _Unit:
    """A span of page text that is never cut further, with its token count."""

    start: int
    end: int
    tokens: int
    paragraph: int
    starts_paragraph: bool


class TokenSplitter(BaseComponent):
    """Splits pages into chunks of at most ``chunk_size`` tokens (see the module docs).

    A chunk is larger only when a single character counts as more than ``chunk_size``
    tokens. Chunk ids are ``f"{source_id}-{i:05d}"``, ``i`` counting from 0 over the file.
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

    def run(self, pages: Sequence[Page], source_id: str, source_name: str) -> list[Chunk]:
        """The chunks of ``pages`` in order, numbered over the whole file."""
        size, overlap = int(self.chunk_size), int(self.chunk_overlap)
        if size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {size}")
        if not 0 <= overlap < size:
            raise ValueError(f"chunk_overlap must be in [0, chunk_size), got {overlap}")
        count: TokenCounter = self.tokenizer or approximate_token_count

        chunks: list[Chunk] = []
        for page in pages:
            units = _units(page.text, count, size)
            for start, end in _pack(units, size, overlap):
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
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
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
    text: str, start: int, end: int, count: TokenCounter, size: int, level: int = 0
) -> Iterator[tuple[int, int, int]]:
    """``(start, end, tokens)`` spans of at most ``size`` tokens covering one sentence.

    ``level`` 0 is the sentence, 1 its lines, 2 their words; past that, characters.
    """
    tokens = count(text[start:end])
    if tokens <= size:
        yield start, end, tokens
        return
    if level >= 2:
        yield from _cut_characters(text, start, end, count, size)
        return
    pattern = _LINE if level == 0 else _WORD
    for match in pattern.finditer(text, start, end):
        sub_start, sub_end = _trim(text, match.start(), match.end())
        if sub_start < sub_end:
            yield from _pieces(text, sub_start, sub_end, count, size, level + 1)


def _cut_characters(
    text: str, start: int, end: int, count: TokenCounter, size: int
) -> Iterator[tuple[int, int, int]]:
    """Longest prefixes of at most ``size`` tokens, found by bisection (a few counts each)."""
    while start < end:
        low, high = start + 1, end
        while low < high:
            middle = (low + high + 1) // 2
            if count(text[start:middle]) <= size:
                low = middle
            else:
                high = middle - 1
        # ``low`` is at least one character, even if that character alone is too big.
        yield start, low, count(text[start:low])
        start = low


def _units(text: str, count: TokenCounter, size: int) -> list[_Unit]:
    units: list[_Unit] = []
    for paragraph, (para_start, para_end) in enumerate(_paragraphs(text)):
        first = True
        for sent_start, sent_end in _sentences(text, para_start, para_end):
            for start, end, tokens in _pieces(text, sent_start, sent_end, count, size):
                units.append(_Unit(start, end, tokens, paragraph, first))
                first = False
    return units


def _pack(units: Sequence[_Unit], size: int, overlap: int) -> list[tuple[int, int]]:
    """Greedy packing of ``units`` into ``(start, end)`` chunk spans."""
    paragraph_tokens: dict[int, int] = defaultdict(int)
    for unit in units:
        paragraph_tokens[unit.paragraph] += unit.tokens

    spans: list[tuple[int, int]] = []
    current: list[_Unit] = []
    tokens = 0
    carried = 0  # leading units of ``current`` repeated from the previous chunk
    for unit in units:
        if len(current) > carried:
            whole_paragraph = paragraph_tokens[unit.paragraph]
            keep_paragraph = unit.starts_paragraph and whole_paragraph <= size
            if tokens + unit.tokens > size or (keep_paragraph and tokens + whole_paragraph > size):
                spans.append((current[0].start, current[-1].end))
                # Room for the overlap is what the next unit (or whole paragraph) leaves.
                need = whole_paragraph if keep_paragraph else unit.tokens
                current = _tail(current, min(overlap, size - need))
                carried = len(current)
                tokens = sum(u.tokens for u in current)
        current.append(unit)
        tokens += unit.tokens
    if len(current) > carried:
        spans.append((current[0].start, current[-1].end))
    return spans


def _tail(units: list[_Unit], budget: int) -> list[_Unit]:
    """The longest run of trailing ``units`` whose tokens sum to at most ``budget``."""
    taken = 0
    first = len(units)
    while first > 0 and taken + units[first - 1].tokens <= budget:
        first -= 1
        taken += units[first].tokens
    return units[first:]
