"""Sentence focus: retrieved passages cut down to the sentences nearest a query.

A small model reads a short prompt better and faster than a long one. The focus embeds
every sentence of the passages found for a query, keeps the ``sentences`` nearest the
query over all of them, each with ``neighbours`` sentences on either side for context,
and shows each passage as its kept sentences in order, ``…`` marking what was left out.
The passages themselves are not changed: citations still point at whole chunks.

A sentence never loses what it belongs to: when a paragraph of several lines starts with a
label line (a heading, a definition-list term, a signature: see
:func:`~ragloom.retrieval.definitions.is_label_line`), a kept sentence of that paragraph
also keeps the paragraph's first sentence, which holds the label. Code has no sentence
ends, so a code block is one sentence, kept whole or not at all.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence

import numpy as np
from theflow import Param

from ragloom.base import BaseComponent
from ragloom.embeddings.base import Embeddings
from ragloom.embeddings.cache import embed_cached, embed_query_cached
from ragloom.retrieval.definitions import is_label_line
from ragloom.schema import RetrievedChunk
from ragloom.splitters import sentence_spans

__all__ = ["SentenceFocus", "Spans", "focused_text", "merge_spans"]

logger = logging.getLogger(__name__)

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")

Spans = tuple[tuple[int, int], ...]
"""``(start, end)`` character spans of a chunk's text, sorted and not overlapping."""


def merge_spans(*spans: Iterable[tuple[int, int]]) -> Spans:
    """The union of span sets of one text (sentence spans never overlap partly)."""
    return tuple(sorted(set().union(*spans)))


def focused_text(text: str, spans: Spans) -> str:
    """``text`` shown as its ``spans`` in order, with ``…`` wherever text was left out."""
    parts: list[str] = []
    cursor = 0
    for start, end in spans:
        if text[cursor:start].strip():
            parts.append("…")
        parts.append(text[start:end])
        cursor = end
    if text[cursor:].strip():
        parts.append("…")
    return " ".join(parts)


class SentenceFocus(BaseComponent):
    """Chooses the sentences of retrieved passages to show for a query (see the module)."""

    embeddings: Embeddings = Param(help="Embeds the query and the sentences.")
    sentences: int = Param(4, help="Sentences kept over all passages: the nearest the query.")
    neighbours: int = Param(1, help="Sentences kept on each side of a chosen one.")

    def run(self, query: str, hits: Sequence[RetrievedChunk]) -> list[Spans | None]:
        """The spans to show of each hit; ``()``: none of it; ``None``: all of it.

        If embedding fails, every hit is shown whole: focus saves tokens, it must not
        cost an answer.
        """
        per_hit = [sentence_spans(hit.chunk.text) for hit in hits]
        flat = [(h, s) for h, spans in enumerate(per_hit) for s in range(len(spans))]
        if not flat:
            return [None] * len(hits)
        texts = [hits[h].chunk.text[slice(*per_hit[h][s])] for h, s in flat]
        try:
            vectors = embed_cached(self.embeddings, texts)  # passages come back again and again
            scores = vectors @ embed_query_cached(self.embeddings, query)
        except Exception as exc:  # any backend failure: fall back to whole passages
            logger.warning("sentence focus failed, showing whole passages: %s", exc)
            return [None] * len(hits)
        kept: list[set[int]] = [set() for _ in hits]
        leads = [_leads(hit.chunk.text, spans) for hit, spans in zip(hits, per_hit, strict=True)]
        for best in np.argsort(-scores, kind="stable")[: self.sentences]:
            h, s = flat[best]
            low, high = max(0, s - self.neighbours), min(len(per_hit[h]), s + self.neighbours + 1)
            kept[h].update(range(low, high))
            kept[h].update(leads[h][i] for i in range(low, high) if leads[h][i] is not None)
        return [tuple(per_hit[h][s] for s in sorted(kept[h])) for h in range(len(hits))]


def _leads(text: str, spans: Sequence[tuple[int, int]]) -> list[int | None]:
    """For each sentence, the index of its paragraph's label sentence, or ``None``."""
    leads: list[int | None] = []
    lead: int | None = None
    paragraph_end = -1
    for index, (start, _) in enumerate(spans):
        if start > paragraph_end:  # the first sentence of a new paragraph
            found = _PARAGRAPH_BREAK.search(text, start)
            paragraph_end = found.start() if found else len(text)
            lines = text[start:paragraph_end].split("\n")
            lead = index if len(lines) > 1 and is_label_line(lines[0]) else None
        leads.append(lead)
    return leads
