"""The BM25 store's vocabulary: term to id, a copy of the database's ``terms`` table."""

from __future__ import annotations

import sqlite3
from collections import Counter

import numpy as np

__all__ = ["TermVocabulary"]


class TermVocabulary:
    """Term ids as the database gives them, kept a prefix of its ``terms`` table.

    Term ids are given in order under the database's write lock, so a process's copy is
    always a prefix of the table: only ids from ``len(self)`` on can be new.
    """

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.store: int | None = None  # the database 'store' key the ids were read from

    def __len__(self) -> int:
        return len(self.ids)

    def clear(self) -> None:
        """Forget every term; they are read again on the next :meth:`sync`."""
        self.ids = {}
        self.store = None

    def sync(self, conn: sqlite3.Connection, store: int) -> bool:
        """Read the terms other processes added since the last look (in a transaction).

        Returns True when the copy had to start over: another database, or its term ids
        renumbered (a new ``store`` key), so anything built on the old ids is stale.
        """
        renumbered = self.store != store
        if renumbered:
            self.ids = {}
            self.store = store
        ids = self.ids
        for term, term_id in conn.execute(
            "SELECT term, id FROM terms WHERE id >= ? ORDER BY id", (len(ids),)
        ):
            ids[term] = term_id
        return renumbered

    def assign(
        self, counts: Counter[str], new_terms: list[tuple[str, int]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """A chunk's distinct term ids and their counts; unknown terms get the next ids
        (appended to ``new_terms``, to be inserted in the same transaction)."""
        ids = self.ids
        term_ids = []
        for term in counts:
            term_id = ids.get(term)
            if term_id is None:
                term_id = ids[term] = len(ids)
                new_terms.append((term, term_id))
            term_ids.append(term_id)
        freqs = np.fromiter(counts.values(), dtype=np.int32, count=len(counts))
        return np.asarray(term_ids, dtype=np.int32), freqs

    def known(self, terms: list[str]) -> list[int]:
        """The ids of the terms the documents use; the others are left out."""
        return [self.ids[t] for t in terms if t in self.ids]
