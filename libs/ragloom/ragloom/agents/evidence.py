"""Evidence an agent gathered over one request, numbered once for citations.

Tools may find the same chunk several times (ReAct searching twice, ReWOO steps in
parallel): the ledger gives each chunk one number for the whole request, so the final
answer's ``[n]`` maps to exactly one chunk, as in FullQA. With a sentence focus, the
ledger also remembers which sentences of each chunk were shown (the union over searches),
so the final prompt shows them and not the whole chunk.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence

from ragloom.qa.citations import EvidenceBlock, evidence_entry
from ragloom.retrieval.focus import Spans, merge_spans
from ragloom.schema import RetrievedChunk

__all__ = ["EvidenceLedger"]


class EvidenceLedger:
    """Numbers retrieved chunks from 1 in the order first seen; safe across threads."""

    def __init__(self) -> None:
        self._items: list[RetrievedChunk] = []
        self._numbers: dict[str, int] = {}
        self._spans: dict[int, Spans | None] = {}  # None: the whole chunk is shown
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def add(
        self, hits: Iterable[RetrievedChunk], spans: Sequence[Spans | None] | None = None
    ) -> list[int]:
        """The number of each hit, giving new chunks the next free numbers.

        ``spans``: per hit, the sentences shown of it (``None``: all of it). Without
        ``spans``, a new chunk is shown whole and a known one as it was."""
        hits = list(hits)
        shown = list(spans) if spans is not None else [None] * len(hits)
        numbers = []
        with self._lock:
            for hit, hit_spans in zip(hits, shown, strict=True):
                number = self._numbers.get(hit.chunk.id)
                if number is None:
                    self._items.append(hit)
                    number = self._numbers[hit.chunk.id] = len(self._items)
                    self._spans[number] = hit_spans
                elif spans is not None:
                    before = self._spans[number]
                    if before is None or hit_spans is None:
                        self._spans[number] = None  # shown whole
                    else:
                        self._spans[number] = merge_spans(before, hit_spans)
                numbers.append(number)
        return numbers

    @property
    def items(self) -> list[RetrievedChunk]:
        """Every chunk seen; ``items[n - 1]`` is ``[n]``."""
        with self._lock:
            return list(self._items)

    def block(
        self,
        count_tokens: Callable[[str], int] | None = None,
        max_tokens: int | None = None,
        numbers: Iterable[int] | None = None,
    ) -> EvidenceBlock:
        """The evidence as a prompt shows it, keeping each chunk's number.

        ``numbers`` chooses which chunks to show (default: all); with ``max_tokens``, the
        chunks that do not fit are left out (in the text only: their numbers stay valid).
        """
        with self._lock:
            items, spans = list(self._items), dict(self._spans)
        wanted = sorted(set(numbers)) if numbers is not None else range(1, len(items) + 1)
        parts: list[str] = []
        used = 0
        for number in wanted:
            if not 1 <= number <= len(items):
                continue
            entry = evidence_entry(number, items[number - 1], spans[number])
            cost = count_tokens(entry) if count_tokens else 0
            if max_tokens is not None and used + cost > max_tokens:
                continue
            parts.append(entry)
            used += cost
        return EvidenceBlock(text="".join(parts), items=items)
