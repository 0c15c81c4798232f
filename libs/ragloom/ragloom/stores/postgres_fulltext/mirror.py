"""A process's BM25 index of one PostgreSQL full-text collection, kept in step with it.

PostgreSQL holds everything (chunks, their term ids, the vocabulary); this is a copy in
memory of the postings, made to be scored with numpy
(:class:`~ragloom.stores.bm25.index.SegmentedBM25`, the embedded store's index). It is
never the only copy of anything: it is read whole from the database on first use, and
before each use it is brought to the collection's current generation by reading only what
changed since (``fulltext_chunks`` rows of later generations, ``fulltext_removed`` rows of
the chunks removed since), in the caller's snapshot. A copy further behind than the
removals kept (:data:`~ragloom.stores.postgres_fulltext.schema.KEEP_GENERATIONS`) is read
whole again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragloom.stores.bm25.index import DocTerms, SegmentedBM25
from ragloom.stores.postgres_fulltext.schema import INT32

__all__ = ["LOAD_BATCH", "CollectionState", "IndexMirror"]

logger = logging.getLogger(__name__)

#: Chunks read at a time when loading. Each batch's rows are made compact arrays at once and
#: the index is built once from all of them: reading 100,000 chunks as one batch kept some
#: 300 MB more resident after the load, and a segment per batch spent the time on merges.
LOAD_BATCH = 10_000

_CHUNK_TERMS = "SELECT doc, id, source_id, term_ids, term_freqs FROM fulltext_chunks"


@dataclass(frozen=True)
class CollectionState:
    """A collection's row as one snapshot sees it."""

    id: int
    generation: int
    kept_since: int


class IndexMirror:
    """The index of one collection as of :attr:`generation`.

    Not thread-safe: the store serialises access. The cursor given to :meth:`current` must
    be in a snapshot (``REPEATABLE READ``) that ``state`` was read in, so that what the
    index is brought to is exactly that generation.
    """

    def __init__(self) -> None:
        self.generation = -1
        self._collection: int | None = None
        self._index: SegmentedBM25 | None = None
        self._doc_of: dict[str, int] = {}  # chunk id -> its row, to match removals

    @property
    def loaded(self) -> bool:
        """Whether an index is in memory (possibly behind the database)."""
        return self._index is not None

    def forget(self) -> None:
        """Drop the index; the next :meth:`current` reads it whole."""
        self.generation, self._collection, self._index, self._doc_of = -1, None, None, {}

    def current(self, cur: Any, state: CollectionState) -> SegmentedBM25:
        """The index at ``state.generation`` (or later, if another thread's newer snapshot
        already brought it there: it only moves forward)."""
        index = self._index
        if index is None or self._collection != state.id or self.generation < state.kept_since:
            return self._load(cur, state)
        if self.generation < state.generation:
            removed, added = self._changes(cur, state)  # reads first: a failure changes nothing
            try:
                self._apply(index, removed, added)
            except ValueError:  # the index refused a change: it no longer matches; read anew
                logger.exception("full-text collection %d: reading it whole again", state.id)
                return self._load(cur, state)
            self.generation = state.generation
        return index

    def _load(self, cur: Any, state: CollectionState) -> SegmentedBM25:
        self.forget()
        started = time.perf_counter()
        ids: list[str] = []
        sources: list[str] = []
        docs: list[int] = []
        parts: list[DocTerms] = []
        with cur.connection.cursor(name="fulltext_mirror_load") as rows:
            rows.itersize = LOAD_BATCH
            rows.execute(f"{_CHUNK_TERMS} WHERE collection = %s ORDER BY doc", (state.id,))
            while batch := rows.fetchmany(LOAD_BATCH):
                docs.extend(int(row[0]) for row in batch)
                ids.extend(row[1] for row in batch)
                sources.extend(row[2] for row in batch)
                parts.append(_doc_terms(batch))
        index = SegmentedBM25()
        if ids:
            index.add(ids, sources, DocTerms.joined(parts))
        self._index, self._doc_of = index, dict(zip(ids, docs, strict=True))
        self._collection, self.generation = state.id, state.generation
        logger.info(
            "read the full-text index of collection %d (%d chunks, generation %d) in %.2f s",
            state.id,
            len(index),
            state.generation,
            time.perf_counter() - started,
        )
        return index

    def _changes(self, cur: Any, state: CollectionState) -> tuple[list[Any], list[Any]]:
        cur.execute(
            "SELECT doc, id, term_ids FROM fulltext_removed "
            "WHERE collection = %s AND generation > %s ORDER BY generation, doc",
            (state.id, self.generation),
            prepare=False,  # as every statement a question runs (see the store)
        )
        removed = cur.fetchall()
        cur.execute(
            f"{_CHUNK_TERMS} WHERE collection = %s AND generation > %s ORDER BY doc",
            (state.id, self.generation),
            prepare=False,
        )
        return removed, cur.fetchall()

    def _apply(self, index: SegmentedBM25, removed: list[Any], added: list[Any]) -> None:
        gone: dict[str, np.ndarray] = {}
        for doc, chunk_id, term_ids in removed:
            # A chunk replaced twice since has two removals; only its row this index holds
            # takes its terms out.
            if self._doc_of.get(chunk_id) == doc:
                gone[chunk_id] = np.frombuffer(term_ids, dtype=INT32)
                del self._doc_of[chunk_id]
        index.remove(gone)
        _append(index, self._doc_of, added)


def _append(index: SegmentedBM25, doc_of: dict[str, int], rows: Sequence[Any]) -> None:
    """Add ``(doc, id, source_id, term_ids, term_freqs)`` rows to the index as one segment."""
    if not rows:
        return
    ids = [row[1] for row in rows]
    index.add(ids, [row[2] for row in rows], _doc_terms(rows))
    doc_of.update(zip(ids, (int(row[0]) for row in rows), strict=True))


def _doc_terms(rows: Sequence[Any]) -> DocTerms:
    """The term ids and counts of ``(doc, id, source_id, term_ids, term_freqs)`` rows."""
    return DocTerms.of(
        [(np.frombuffer(row[3], dtype=INT32), np.frombuffer(row[4], dtype=INT32)) for row in rows]
    )
