"""Numbered evidence for prompts, and the ``[n]`` citations read back from answers."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from ragloom.events import Citation
from ragloom.retrieval.focus import Spans, focused_text
from ragloom.schema import RetrievedChunk
from ragloom.words import terms, words_at

__all__ = [
    "EvidenceBlock",
    "attribute_uncited",
    "build_evidence",
    "citations_for",
    "cited_numbers",
    "cited_sentences",
    "citing_sentences",
    "content_words",
    "evidence_entry",
    "has_words",
    "passage_text",
    "quoted_span",
    "split_sentences",
    "strip_citations",
]

# At most 9 digits: a number past that is no source, and int() refuses 4,300 digits and more.
_CITATION = re.compile(r"\[(\d{1,9}(?:\s*[,;]\s*\d{1,9})*)\]")
_LEADING_CITATIONS = re.compile(r"\s*(?:\[\d{1,9}(?:\s*[,;]\s*\d{1,9})*\]\s*)+")
# A sentence ends at . ! ? followed by a space or the end (so "flowsettings.py" is one
# word), at CJK end marks (no space follows them) or at a line break.
_SENTENCE = re.compile(r".+?(?:[.!?]+(?=\s|$)|[。！？]+|\n|$)", re.S)
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "which",
        "who",
        "what",
        "when",
        "where",
        "how",
        "does",
        "do",
        "did",
        "not",
        "no",
    ]
)


@dataclass(frozen=True)
class EvidenceBlock:
    """Evidence numbered from 1 as the prompt shows it; ``items[n - 1]`` is ``[n]``."""

    text: str
    items: list[RetrievedChunk]


def passage_text(item: RetrievedChunk, spans: Spans | None = None) -> str:
    """A passage as prompts show it, on one line: ``(file, page p) text``.

    ``spans``: only these sentences of it are shown (a sentence focus); ``None``: all."""
    chunk = item.chunk
    where = chunk.source_name + (f", page {chunk.page}" if chunk.page else "")
    text = chunk.text if spans is None else focused_text(chunk.text, spans)
    return f"({where}) {' '.join(text.split())}"


def evidence_entry(number: int, item: RetrievedChunk, spans: Spans | None = None) -> str:
    """One line of evidence as prompts show it: ``[n] (file, page p) text``."""
    return f"[{number}] {passage_text(item, spans)}\n"


def build_evidence(
    retrieved: Sequence[RetrievedChunk],
    count_tokens: Callable[[str], int],
    max_tokens: int,
    spans: Sequence[Spans | None] | None = None,
) -> EvidenceBlock:
    """Number the evidence in retrieval order, keeping what fits in ``max_tokens``.

    ``spans``: per retrieved chunk, the sentences to show of it (a sentence focus):
    ``None`` shows all of it, ``()`` leaves it out. Citations still point at whole chunks.
    The text depends only on the chunks, their spans and their order, so the same evidence
    gives a byte-identical prompt prefix that llama.cpp can reuse from its cache.
    """
    shown = list(spans) if spans is not None else [None] * len(retrieved)
    parts: list[str] = []
    kept: list[RetrievedChunk] = []
    used = 0
    seen: set[str] = set()
    for item, item_spans in zip(retrieved, shown, strict=True):
        if item.chunk.id in seen or item_spans == ():
            continue
        entry = evidence_entry(len(kept) + 1, item, item_spans)
        cost = count_tokens(entry)
        if used + cost > max_tokens:
            continue
        seen.add(item.chunk.id)
        parts.append(entry)
        kept.append(item)
        used += cost
    return EvidenceBlock(text="".join(parts), items=kept)


def split_sentences(text: str) -> list[str]:
    """``text`` cut into sentences, each with its end mark and the space before it, so
    that ``"".join(split_sentences(text)) == text``. A sentence ends at ``.``, ``!`` or
    ``?`` before a space or the end ("flowsettings.py" is one word), at a CJK end mark or
    at a line break."""
    return [match.group(0) for match in _SENTENCE.finditer(text)]


def cited_numbers(answer: str, limit: int | None = None) -> list[int]:
    """The distinct ``[n]`` numbers in ``answer`` (1..limit; any n ≥ 1 without a limit),
    in order of first use. ``[1, 2]`` and ``[1; 2]`` cite both."""
    found: list[int] = []
    for match in _CITATION.finditer(answer):
        for part in re.split(r"[,;]", match.group(1)):
            number = int(part)
            if number >= 1 and (limit is None or number <= limit) and number not in found:
                found.append(number)
    return found


def citation_of(
    number: int, item: RetrievedChunk, highlight: tuple[int, int] | None = None
) -> Citation:
    """``[number]`` as a citation of the retrieved chunk ``item``."""
    chunk = item.chunk
    return Citation(
        number=number,
        source=chunk.source_name,
        page=chunk.page,
        text=chunk.text,
        chunk_id=chunk.id,
        score=item.score,
        start=chunk.start,
        end=chunk.end,
        found_by=dict(item.found_by),
        highlight=highlight,
    )


def citations_for(answer: str, evidence: EvidenceBlock) -> list[Citation]:
    """The citations an answer makes, each mapped to its chunk, page and text."""
    result = []
    for number in cited_numbers(answer, len(evidence.items)):
        item = evidence.items[number - 1]
        result.append(citation_of(number, item, quoted_span(answer, number, item.chunk.text)))
    return result


def cited_sentences(answer: str) -> list[tuple[str, list[int]]]:
    """The sentences of ``answer`` that say something, each as written (stripped, its
    ``[n]`` marks kept) with the numbers it cites, in order.

    A citation standing alone after a sentence (``… 451 kelvin. [1]``) belongs to the
    sentence before it; markers opening the answer belong to its first sentence.
    """
    found: list[tuple[str, list[int]]] = []
    for sentence in split_sentences(answer):
        leading = _LEADING_CITATIONS.match(sentence)
        rest = sentence[leading.end() :] if leading else sentence
        opening = cited_numbers(leading.group(0)) if leading else []
        if opening and found:  # markers opening a sentence close the one before
            text, numbers = found[-1]
            found[-1] = (text, list(dict.fromkeys([*numbers, *opening])))
            opening = []
        if _CITATION.sub(" ", rest).strip():
            found.append((rest.strip(), list(dict.fromkeys([*opening, *cited_numbers(rest)]))))
    return found


def citing_sentences(answer: str, number: int) -> list[str]:
    """The sentences of ``answer`` that cite ``[number]``, without their ``[n]`` markers
    (:func:`cited_sentences`)."""
    found = [
        _CITATION.sub(" ", text).strip()
        for text, numbers in cited_sentences(answer)
        if number in numbers
    ]
    return list(dict.fromkeys(found))


def quoted_span(
    answer: str, number: int, chunk_text: str, min_words: int = 2
) -> tuple[int, int] | None:
    """The span of ``chunk_text`` that the sentences citing ``[number]`` quote, if any.

    The span is the longest run of consecutive words (compared as search compares them,
    :func:`ragloom.words.words_at`: case-folded, Arabic vowel marks aside, one character
    with its marks at a time in CJK, Thai and other text without spaces) shared by a
    citing sentence and the chunk, as ``(start, end)`` character offsets into
    ``chunk_text``. ``None`` when that run holds fewer than ``min_words`` words other than
    stop words ("451 kelvin" counts, "in the" does not): a paraphrase quotes nothing.
    """
    chunk_tokens = words_at(chunk_text)
    chunk_words = [t[0] for t in chunk_tokens]
    best_start, best_size = 0, 0
    for sentence in citing_sentences(answer, number):
        words = [t[0] for t in words_at(sentence)]
        matcher = SequenceMatcher(None, words, chunk_words, autojunk=False)
        match = matcher.find_longest_match(0, len(words), 0, len(chunk_words))
        if match.size > best_size:
            best_start, best_size = match.b, match.size
    run = chunk_words[best_start : best_start + best_size]
    if not run or sum(word not in _STOPWORDS for word in run) < max(1, min_words):
        return None
    return chunk_tokens[best_start][1], chunk_tokens[best_start + best_size - 1][2]


def strip_citations(text: str) -> str:
    """``text`` with its ``[n]`` citation marks removed."""
    return _CITATION.sub(" ", text)


def has_words(answer: str) -> bool:
    """Whether ``answer`` says anything besides ``[n]`` marks and punctuation."""
    return any(ch.isalnum() for ch in strip_citations(answer))


def content_words(text: str) -> set[str]:
    """The words of ``text`` that carry meaning (no stopwords, no single letters), as
    search reads them (:func:`ragloom.words.terms`: folded, with their combining marks,
    text without spaces as bigrams), so that attribution agrees with what was found."""
    return {w for w in terms(text, _STOPWORDS) if len(w) > 1}


def attribute_uncited(answer: str, evidence: EvidenceBlock, min_overlap: float = 0.6) -> str:
    """Add ``[n]`` to each uncited sentence that the evidence item ``n`` clearly supports.

    Small models often answer from the evidence without citing it. A sentence without a
    citation gets the evidence item that holds the largest share of its content words, if
    that share is at least ``min_overlap``; other sentences are left as they are.
    """
    item_words = [content_words(item.chunk.text) for item in evidence.items]
    pieces: list[str] = []
    for sentence in split_sentences(answer):
        words = content_words(sentence)
        if _CITATION.search(sentence) or not words or not item_words:
            pieces.append(sentence)
            continue
        shares = [len(words & known) / len(words) for known in item_words]
        best = max(range(len(shares)), key=lambda i: (shares[i], -i))
        if shares[best] < min_overlap:
            pieces.append(sentence)
            continue
        body = sentence.rstrip()
        trailing = sentence[len(body) :]
        stripped = body.rstrip(".!?。！？")
        pieces.append(f"{stripped} [{best + 1}]{body[len(stripped) :]}{trailing}")
    return "".join(pieces)
