"""Evidence an agent gathered over one request, numbered once for citations.

Tools may find the same chunk several times (ReAct searching twice, ReWOO steps in
parallel): the ledger gives each chunk one number for the whole request, so the final
answer's ``[n]`` maps to exactly one chunk, as in FullQA.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from ragloom.qa.citations import EvidenceBlock, evidence_entry
from ragloom.schema import RetrievedChunk

__all__ = ["EvidenceLedger"]


class EvidenceLedger:
    """Numbers retrieved chunks from 1 in the order first seen; safe across threads."""

    def __init__(self) -> None:
        self._items: list[RetrievedChunk] = []
        self._numbers: dict[str, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def add(self, hits: Iterable[RetrievedChunk]) -> list[int]:
        """The number of each hit, giving new chunks the next free numbers."""
        numbers = []
        with self._lock:
            for hit in hits:
                number = self._numbers.get(hit.chunk.id)
                if number is None:
                    self._items.append(hit)
                    number = self._numbers[hit.chunk.id] = len(self._items)
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
        items = self.items
        wanted = sorted(set(numbers)) if numbers is not None else range(1, len(items) + 1)
        parts: list[str] = []
        used = 0
        for number in wanted:
            if not 1 <= number <= len(items):
                continue
            entry = evidence_entry(number, items[number - 1])
            cost = count_tokens(entry) if count_tokens else 0
            if max_tokens is not None and used + cost > max_tokens:
                continue
            parts.append(entry)
            used += cost
        return EvidenceBlock(text="".join(parts), items=items)
