"""TokenSplitter properties on generated texts: exact spans, sizes, caps, nothing lost.

Texts mix words, sentences, CJK, odd whitespace and newlines, any Unicode, and long runs
without whitespace (base64-like, one letter repeated, a run of full stops), split with
counters that behave like real ones: the approximate count, one that makes a long word a
single unknown token (as WordPiece does), one where some characters are worth more than a
whole chunk, and one that counts some characters as nothing (as the bundled model does
with combining marks).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import pairwise

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragloom.schema import Page
from ragloom.splitters import TokenSplitter, approximate_token_count
from ragloom.splitters.token import _SENTENCE_END

_SETTINGS = settings(max_examples=150, deadline=2_000, suppress_health_check=[HealthCheck.too_slow])


def _word_piece_like(text: str) -> int:
    """A word of more than 100 characters is one unknown token, else one per 4 characters."""
    return sum(1 if len(word) > 100 else -(-len(word) // 4) for word in text.split())


def _heavy_characters(text: str) -> int:
    """One token per character, but 50 for each '€' (a character bigger than a chunk)."""
    return sum(50 if char == "€" else 1 for char in text if not char.isspace())


def _weightless_marks(text: str) -> int:
    """The approximate count, with combining acute accents (U+0301) worth nothing."""
    return approximate_token_count(text.replace("\u0301", ""))


_COUNTERS: dict[str, Callable[[str], int]] = {
    "approximate": approximate_token_count,
    "word-piece-like": _word_piece_like,
    "heavy-characters": _heavy_characters,
    "weightless-marks": _weightless_marks,
}

_words = st.sampled_from(
    "the model answer. Question? yes! e.g. 3.14 don't (aside) «quoted» naïve café "  # noqa: SIM905
    "https://example.com/a?b=c 中文文本。 日本語の！ テキスト？ € … -".split(" ")
)
_runs = st.builds(
    lambda alphabet, n: (alphabet * (n // len(alphabet) + 1))[:n],
    st.sampled_from(["a", "QUJD+/09zZ", "....", "!?", "x.", "€", "长", "\u0301 ", "e\u0301"]),
    st.integers(1, 5_000),
)
_spaces = st.sampled_from([" ", "  ", "\n", "\n\n", " \n \n", "\t", "\r\n", "\u3000", "\x0c"])
_pieces = st.one_of(_words, _runs, _spaces, st.text(max_size=30))
_texts = st.lists(_pieces, max_size=60).map("".join)


@st.composite
def _splitters(draw: st.DrawFn) -> tuple[TokenSplitter, Callable[[str], int]]:
    size = draw(st.integers(1, 60))
    overlap = draw(st.integers(0, size - 1))
    name = draw(st.sampled_from(sorted(_COUNTERS)))
    per_token = draw(st.sampled_from([1, 3, 8, 32]))
    splitter = TokenSplitter(
        chunk_size=size,
        chunk_overlap=overlap,
        tokenizer=_COUNTERS[name],
        max_chars_per_token=per_token,
    )
    return splitter, _COUNTERS[name]


@_SETTINGS
@given(texts=st.lists(_texts, min_size=1, max_size=3), setup=_splitters())
def test_chunks_are_exact_bounded_ordered_and_lose_nothing(
    texts: list[str], setup: tuple[TokenSplitter, Callable[[str], int]]
) -> None:
    splitter, count = setup
    size, overlap = splitter.chunk_size, splitter.chunk_overlap
    cap = size * splitter.max_chars_per_token
    pages = [Page(text, number=n) for n, text in enumerate(texts, start=1)]
    chunks = splitter(pages, source_id="src", source_name="f")
    assert [c.id for c in chunks] == [f"src-{i:05d}" for i in range(len(chunks))]
    for page in pages:
        mine = [c for c in chunks if c.page == page.number]
        covered = bytearray(len(page.text))
        for chunk in mine:
            assert page.text[chunk.start : chunk.end] == chunk.text
            assert chunk.text and chunk.text == chunk.text.strip()
            assert len(chunk.text) <= cap
            # Only a single character worth more than a chunk may go over the size.
            assert count(chunk.text) <= size or len(chunk.text) == 1, chunk.text
            covered[chunk.start : chunk.end] = b"\x01" * (chunk.end - chunk.start)
        lost = [i for i, char in enumerate(page.text) if not char.isspace() and not covered[i]]
        assert not lost, page.text[lost[0] : lost[0] + 20]
        for previous, chunk in pairwise(mine):
            assert previous.start < chunk.start and previous.end < chunk.end
            if chunk.start < previous.end:
                assert overlap > 0
                assert count(page.text[chunk.start : previous.end]) <= overlap
                # Repeated text is bounded in characters too, so chunks move on.
                assert previous.end - chunk.start <= overlap * splitter.max_chars_per_token
        assert sum(len(c.text) for c in mine) <= len(page.text) * size / (size - overlap) + cap


# The sentence-end pattern before it was made linear: the rewrite must find the same ends
# wherever the splitter searches (from the start of the text or after whitespace).
_QUADRATIC_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)\]»]*(?=\s|$)" r"|[。！？]+[」』”’）\"']*")


@settings(max_examples=500, deadline=2_000)
@given(
    text=st.text(alphabet=".!?…\"'”’)]»。！？」』） \n\tab中", max_size=40),
    data=st.data(),
)
def test_the_linear_sentence_pattern_finds_the_same_ends(text: str, data: st.DataObject) -> None:
    starts = [0] + [i + 1 for i, char in enumerate(text) if char.isspace()]
    start = data.draw(st.sampled_from(starts))
    end = data.draw(st.integers(start, len(text)))
    old = [m.span() for m in _QUADRATIC_SENTENCE_END.finditer(text, start, end)]
    assert [m.span() for m in _SENTENCE_END.finditer(text, start, end)] == old
