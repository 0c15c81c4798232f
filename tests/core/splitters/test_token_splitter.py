"""TokenSplitter: exact spans, sizes, overlap, paragraphs, pages and CJK, over many texts."""

from __future__ import annotations

import random
import re
from itertools import pairwise

import pytest

from ragloom.schema import Chunk, Page
from ragloom.splitters import TokenSplitter, approximate_token_count
from ragloom.splitters.token import MAX_CHARS_PER_TOKEN

# Word lists read better as prose than as one-word-per-line list literals.
_WORDS = (  # noqa: SIM905
    "the a model document answer question retrieval chunk token page paragraph sentence "
    "vector index store offline local privacy citation evidence context window budget "
    "https://example.com/a/very/long/path?with=query&and=more e.g. 3.14 don't (aside) "
    "«quoted» naïve café"
).split()
_CJK_PHRASES = "中文文本 测试 这是一个 句子 检索 模型 回答问题 日本語の テキスト".split()  # noqa: SIM905


def _latin_sentence(rng: random.Random, longest: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(1, longest))]
    words[0] = words[0].capitalize()
    return " ".join(words) + rng.choice([".", ".", "!", "?", '."', "...", ""])


def _cjk_sentence(rng: random.Random, longest: int) -> str:
    body = "".join(rng.choice(_CJK_PHRASES) for _ in range(rng.randint(1, longest)))
    return body + rng.choice(["。", "！", "？", "，"])


def _random_text(seed: int) -> str:
    """A page of mixed prose: paragraphs, lines, very long sentences, CJK, odd whitespace."""
    rng = random.Random(seed)
    paragraphs = []
    for _ in range(rng.randint(1, 12)):
        kind = rng.random()
        if kind < 0.15:
            paragraphs.append("".join(_cjk_sentence(rng, 12) for _ in range(rng.randint(1, 8))))
        elif kind < 0.25:  # a list or a PDF's hard-wrapped lines, no sentence ends
            lines = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 15)))]
            lines += ["- " + rng.choice(_WORDS) * rng.randint(1, 3) for _ in range(20)]
            paragraphs.append("\n".join(lines))
        elif kind < 0.3:  # one enormous word
            paragraphs.append("x" * rng.randint(50, 400) + " tail.")
        else:
            sep = rng.choice([" ", "  ", "\n", " \t"])
            paragraphs.append(sep.join(_latin_sentence(rng, 60) for _ in range(rng.randint(1, 10))))
    breaks = ["\n\n", "\n\n\n", "\n \n", "\n\t\n  "]
    text = paragraphs[0]
    for paragraph in paragraphs[1:]:
        text += rng.choice(breaks) + paragraph
    return rng.choice(["", "  ", "\n"]) + text + rng.choice(["", "\n", " \n\n"])


def _check_invariants(
    pages: list[Page], chunks: list[Chunk], size: int, overlap: int, count=approximate_token_count
) -> None:
    assert [c.id for c in chunks] == [f"src-{i:05d}" for i in range(len(chunks))]
    by_page: dict[int | None, list[Chunk]] = {}
    for chunk in chunks:
        by_page.setdefault(chunk.page, []).append(chunk)
    for page in pages:
        mine = by_page.get(page.number, [])
        covered = bytearray(len(page.text))
        for chunk in mine:
            # The span is exact, trimmed, and within the size.
            assert page.text[chunk.start : chunk.end] == chunk.text
            assert chunk.text and chunk.text == chunk.text.strip()
            assert count(chunk.text) <= size, chunk.text
            assert chunk.source_id == "src" and chunk.source_name == "file.txt"
            covered[chunk.start : chunk.end] = b"\x01" * (chunk.end - chunk.start)
        # No text is lost: every non-space character is in some chunk.
        lost = [i for i, ch in enumerate(page.text) if not ch.isspace() and not covered[i]]
        assert not lost, page.text[lost[0] : lost[0] + 40]
        for previous, chunk in pairwise(mine):
            assert previous.start < chunk.start and previous.end < chunk.end
            shared = page.text[chunk.start : previous.end]
            if overlap == 0:
                assert chunk.start >= previous.end
            elif chunk.start < previous.end:
                assert count(shared) <= overlap


@pytest.mark.parametrize("seed", range(40))
def test_invariants_on_random_texts(seed: int) -> None:
    rng = random.Random(1000 + seed)
    size = rng.choice([8, 20, 50, 120, 200])
    overlap = rng.choice([0, min(5, size - 1), size // 4, size - 1])
    pages = [Page(_random_text(seed * 10 + n), number=n + 1) for n in range(rng.randint(1, 3))]
    splitter = TokenSplitter(chunk_size=size, chunk_overlap=overlap)
    chunks = splitter(pages, source_id="src", source_name="file.txt")
    _check_invariants(pages, chunks, size, overlap)


def _sentences(n: int, words: int = 6) -> list[str]:
    """``n`` sentences of ``words`` tokens each (the period included)."""
    return [" ".join([f"S{i}"] + ["word"] * (words - 2)) + "." for i in range(n)]


def test_chunks_are_whole_sentences() -> None:
    sentences = _sentences(30, words=8)
    text = " ".join(sentences)
    starts = {m.start() for m in re.finditer(r"S\d+", text)}
    ends = {m.end() for m in re.finditer(r"\.", text)}
    chunks = TokenSplitter(chunk_size=30, chunk_overlap=0)([Page(text)], "src", "file.txt")
    assert len(chunks) == 10  # three 8-token sentences fit in 30, four do not
    for chunk in chunks:
        assert chunk.start in starts and chunk.end in ends
    assert " ".join(c.text for c in chunks) == text


def test_overlap_repeats_whole_trailing_sentences() -> None:
    text = " ".join(_sentences(40, words=6))
    chunks = TokenSplitter(chunk_size=30, chunk_overlap=13)([Page(text)], "src", "file.txt")
    assert len(chunks) > 5
    for previous, chunk in pairwise(chunks):
        shared = text[chunk.start : previous.end]
        assert previous.text.endswith(shared)
        assert chunk.text.startswith(shared)
        # Two whole sentences (12 tokens) fit in 13, a third does not.
        assert approximate_token_count(shared) == 12
        assert re.fullmatch(r"S\d+ word word word word\. S\d+ word word word word\.", shared)


def test_short_paragraphs_are_never_cut() -> None:
    rng = random.Random(7)
    paragraphs = [
        " ".join(_latin_sentence(rng, 8) for _ in range(rng.randint(1, 5))) for _ in range(30)
    ]
    paragraphs = [p for p in paragraphs if approximate_token_count(p) <= 60]
    text = "\n\n".join(paragraphs)
    chunks = TokenSplitter(chunk_size=60, chunk_overlap=10)([Page(text)], "src", "file.txt")
    _check_invariants([Page(text)], chunks, 60, 10)
    for paragraph in paragraphs:
        assert any(paragraph in chunk.text for chunk in chunks), paragraph


def test_heading_stays_with_a_long_paragraph() -> None:
    long_paragraph = " ".join(_sentences(20))
    text = "# Setup\n\n" + long_paragraph
    chunks = TokenSplitter(chunk_size=40, chunk_overlap=0)([Page(text)], "src", "file.txt")
    assert chunks[0].text.startswith("# Setup\n\nS0 ")


def test_long_sentence_is_cut_at_word_boundaries() -> None:
    text = " ".join(f"w{i}" for i in range(500)) + "."  # 501 tokens
    chunks = TokenSplitter(chunk_size=50, chunk_overlap=0)([Page(text)], "src", "file.txt")
    assert len(chunks) == 11
    for chunk in chunks:
        assert chunk.start == 0 or text[chunk.start - 1] == " "
        assert chunk.end == len(text) or text[chunk.end] == " "
        assert approximate_token_count(chunk.text) <= 50


def test_lines_are_preferred_over_words_in_a_long_sentence() -> None:
    lines = [f"item {i} alpha beta gamma" for i in range(30)]  # 5 tokens a line
    text = "\n".join(lines)
    chunks = TokenSplitter(chunk_size=23, chunk_overlap=0)([Page(text)], "src", "file.txt")
    for chunk in chunks:
        assert chunk.text.split("\n") == [line for line in lines if line in chunk.text]
    assert [len(c.text.split("\n")) for c in chunks][:3] == [4, 4, 4]


def test_huge_word_is_cut_by_characters() -> None:
    def count(text: str) -> int:
        return -(-len(text) // 4)  # one token per 4 characters

    text = "a" * 1000
    splitter = TokenSplitter(chunk_size=10, chunk_overlap=2, tokenizer=count)
    chunks = splitter([Page(text)], "src", "file.txt")
    assert "".join(c.text for c in chunks) == text
    assert all(len(c.text) == 40 for c in chunks)


def test_chunks_never_cross_pages_and_ids_run_over_the_file() -> None:
    pages = [Page(" ".join(_sentences(10)), number=n) for n in (1, 2, 5)]
    chunks = TokenSplitter(chunk_size=20, chunk_overlap=6)(pages, "src", "file.txt")
    _check_invariants(pages, chunks, 20, 6)
    assert [c.page for c in chunks] == sorted(c.page for c in chunks)
    assert {c.page for c in chunks} == {1, 2, 5}
    first_of_page_2 = next(c for c in chunks if c.page == 2)
    assert first_of_page_2.start == 0  # no overlap carried over from page 1


def test_unpaged_text_and_blank_pages() -> None:
    pages = [Page("   \n\n  "), Page("Just one sentence.")]
    chunks = TokenSplitter()(pages, "src", "file.txt")
    assert [(c.text, c.page, c.start, c.end) for c in chunks] == [
        ("Just one sentence.", None, 0, 18)
    ]
    assert TokenSplitter()([], "src", "file.txt") == []


def test_cjk_without_spaces() -> None:
    sentences = ["这是第一个句子。", "这是第二个句子，比较长一点！", "第三句？", "最后一句话。"]
    text = "".join(sentences * 6)
    chunks = TokenSplitter(chunk_size=20, chunk_overlap=5)([Page(text)], "src", "file.txt")
    _check_invariants([Page(text)], chunks, 20, 5)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text[-1] in "。！？"  # every sentence here fits: cut between sentences
        assert chunk.start == 0 or text[chunk.start - 1] in "。！？"


def test_cjk_sentence_longer_than_a_chunk() -> None:
    text = "长" * 70 + "。"
    chunks = TokenSplitter(chunk_size=20, chunk_overlap=0)([Page(text)], "src", "file.txt")
    assert [len(c.text) for c in chunks] == [20, 20, 20, 11]


def test_each_sentence_is_counted_once() -> None:
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return approximate_token_count(text)

    sentences = _sentences(200)
    text = "\n\n".join(" ".join(sentences[i : i + 5]) for i in range(0, 200, 5))
    TokenSplitter(chunk_size=40, chunk_overlap=10, tokenizer=count)([Page(text)], "s", "f")
    assert sorted(calls) == sorted(sentences)


def test_tokenizer_param_accepts_a_bound_method() -> None:
    class Model:
        def count_tokens(self, text: str) -> int:
            return len(text.split())

    splitter = TokenSplitter(chunk_size=4, chunk_overlap=0, tokenizer=Model().count_tokens)
    chunks = splitter([Page("one two three. four five six. seven.")], "s", "f")
    assert [c.text for c in chunks] == ["one two three.", "four five six. seven."]


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (10, 10), (10, -1), (5, 7)])
def test_invalid_sizes(size: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        TokenSplitter(chunk_size=size, chunk_overlap=overlap)([Page("text.")], "s", "f")


def test_defaults() -> None:
    splitter = TokenSplitter()
    assert (splitter.chunk_size, splitter.chunk_overlap, splitter.tokenizer) == (240, 36, None)
    assert splitter.max_chars_per_token == MAX_CHARS_PER_TOKEN


def test_approximate_token_count() -> None:
    assert approximate_token_count("Hello, world!") == 4
    assert approximate_token_count("中文。") == 3
    assert approximate_token_count("   ") == 0
    assert approximate_token_count("日本語\u3000テキスト") == 7  # the ideographic space is a space


def _word_piece_like(text: str) -> int:
    """Counts like WordPiece: a word of more than 100 characters is one unknown token."""
    return sum(1 if len(word) > 100 else -(-len(word) // 4) for word in text.split())


def test_a_chunk_never_holds_more_than_its_character_cap() -> None:
    text = "a" * 100_000  # one "token" for the model, whatever its length
    splitter = TokenSplitter(chunk_size=20, chunk_overlap=5, tokenizer=_word_piece_like)
    chunks = splitter([Page(text)], "src", "file.txt")
    assert "".join(c.text for c in chunks) == text
    assert max(len(c.text) for c in chunks) == 20 * MAX_CHARS_PER_TOKEN == 640
    assert len(chunks) == 158  # 156 of 640 characters; 80 and 80 (a prefix of 81 is 21 tokens)


def test_the_cap_splits_a_whitespace_gap_too() -> None:
    text = "alpha" + " " * 50_000 + "omega."
    chunks = TokenSplitter(chunk_size=10, chunk_overlap=3)([Page(text)], "src", "file.txt")
    assert [c.text for c in chunks] == ["alpha", "omega."]


def test_the_cap_is_a_setting() -> None:
    text = " ".join(["word"] * 40)  # 40 tokens, 199 characters
    splitter = TokenSplitter(chunk_size=50, chunk_overlap=0, max_chars_per_token=2)
    chunks = splitter([Page(text)], "src", "file.txt")
    assert [len(c.text) for c in chunks] == [99, 99]  # 100 characters at most
    with pytest.raises(ValueError, match="max_chars_per_token"):
        TokenSplitter(max_chars_per_token=0)([Page(text)], "s", "f")


def test_a_long_run_is_counted_a_bounded_number_of_times() -> None:
    counted: list[int] = []

    def count(text: str) -> int:
        counted.append(len(text))
        return approximate_token_count(text)

    run = "".join(f"{i:x}+/" for i in range(60_000))  # 356 kB, words and marks, no space
    chunks = TokenSplitter(chunk_size=240, chunk_overlap=36, tokenizer=count)(
        [Page(run)], "src", "file.txt"
    )
    assert "".join(c.text for c in chunks) == run
    assert all(approximate_token_count(c.text) <= 240 for c in chunks)
    # Bisecting the whole rest of the run for each piece counted it 392 times over; 1.6 now.
    assert sum(counted) < 3 * len(run)


def test_units_that_count_as_nothing_are_not_all_repeated() -> None:
    # The bundled model counts a combining mark alone as no token. Repeating every such
    # unit of a chunk in the next made 46,000 chunks of 100 kB (3,500 times the text).
    def count(text: str) -> int:
        return sum(1 for char in text if not char.isspace() and char != "\u0301")

    text = "\u0301 " * 50_000
    splitter = TokenSplitter(chunk_size=240, chunk_overlap=36, tokenizer=count)
    chunks = splitter([Page(text)], "src", "file.txt")
    assert len(chunks) == 16
    assert sum(len(c.text) for c in chunks) < 1.2 * len(text)
    for previous, chunk in pairwise(chunks):
        assert previous.end - chunk.start <= 36 * MAX_CHARS_PER_TOKEN
