"""A :class:`~ragloom.stores.base.FullTextStore` kept in PostgreSQL, scored in memory.

PostgreSQL holds the chunks, each chunk's term ids and counts, the vocabulary and the counts
(:mod:`~ragloom.stores.postgres_fulltext.schema`); each add or delete is one transaction,
and writers of one collection take a transaction-scoped advisory lock, so the counts and
term ids stay exact when several processes index into it.

Each process scores questions with an index in memory
(:class:`~ragloom.stores.postgres_fulltext.mirror.IndexMirror`), which every query first
brings to the collection's current generation in its own snapshot: a change committed by
any process is found by the next query of every other, and nothing lives only in one
process. A question pays one round trip to learn the generation and its terms' ids, and
one to read the chunks found; scoring is numpy's.

The terms are :func:`~ragloom.stores.bm25.tokenizer.tokenize`'s, so CJK text is found by
its character bigrams, and the scores are exactly the embedded store's (bm25s's Lucene
BM25, k1 = 1.5, b = 0.75, idf over the live chunks): it is the same index.
PostgreSQL's own ``tsvector`` ranking (``ts_rank``) was not used: it has no inverse
document frequency, so a word in every chunk weighs as much as a rare name (docs/deploy.md).
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import replace
from typing import Any

import numpy as np

from ragloom.postgres_outage import outage_words
from ragloom.schema import Chunk
from ragloom.storable import storable_text
from ragloom.stores.base import FullTextStore, StoreUnavailableError
from ragloom.stores.bm25 import terms as bm25_terms
from ragloom.stores.bm25.index import SegmentedBM25
from ragloom.stores.bm25.tokenizer import TOKENIZER_VERSION, query_terms, tokenize
from ragloom.stores.bm25.vocab import TermVocabulary
from ragloom.stores.postgres_fulltext import schema, writes
from ragloom.stores.postgres_fulltext.mirror import CollectionState, IndexMirror

__all__ = ["ConnectionFactory", "PostgresFullTextStore"]

logger = logging.getLogger(__name__)

ConnectionFactory = Callable[[], AbstractContextManager[Any]]
"""Gives a psycopg 3 connection to PostgreSQL (not in autocommit mode, no transaction open)
for the length of a ``with`` block: a pool's connection, or ``psycopg.connect(url)``."""

# The statements a question runs are never prepared (``prepare=False``): psycopg prepares a
# statement run five times on a connection, and PostgreSQL may then keep one generic plan
# for it, made when the table was small: a sequential scan, which stays while the table
# grows (a question took 55 ms at 100k chunks instead of 2 ms). Planned afresh each time,
# they use the indices; planning costs about 0.1 ms.

# The collection's state and the ids of the given terms, in one round trip.
_STATE_AND_TERMS = """
SELECT c.id, c.generation, c.kept_since, t.term, t.term_id
FROM fulltext_collections c
LEFT JOIN fulltext_terms t ON t.collection = c.id AND t.term = ANY(%(terms)s)
WHERE c.name = %(name)s
"""


_Snapshot = tuple[Any, CollectionState, dict[str, int]]


class _NoCollection(Exception):
    """The collection has no row (nothing was ever added, or it was dropped)."""


def _storable(chunk: Chunk) -> Chunk:
    """``chunk`` with text PostgreSQL takes (its terms are tokenized from the original; ids
    are Ragloom's own and never hold NUL)."""
    return replace(chunk, text=storable_text(chunk.text)) if "\x00" in chunk.text else chunk


def _storable_metadata(chunk: Chunk) -> dict[str, Any]:
    return {k: storable_text(v) if isinstance(v, str) else v for k, v in chunk.metadata().items()}


class PostgresFullTextStore(FullTextStore):
    """The chunks of one ``collection`` (an index) in PostgreSQL, searched by BM25.

    ``connect`` gives a connection per call (see :data:`ConnectionFactory`), so the store is
    safe to share between threads. Nothing is created until the store is first written,
    and nothing is read into memory until its first query. A server that cannot be reached
    (restarting, or the network failed) raises
    :class:`~ragloom.stores.base.StoreUnavailableError`.
    """

    def __init__(self, connect: ConnectionFactory, collection: str) -> None:
        self.connect = connect
        self.collection = collection
        self._tables_ready = False  # once made and current, tables are never dropped
        self._lock = threading.Lock()  # around the index in memory
        self._mirror = IndexMirror()

    def __repr__(self) -> str:
        return f"PostgresFullTextStore(collection={self.collection!r})"

    # -- connections ------------------------------------------------------------------------

    @contextmanager
    def _transaction(self, snapshot: bool = False) -> Iterator[Any]:
        """A cursor in one transaction: committed at the end of the block, else rolled back.

        ``snapshot``: a read-only ``REPEATABLE READ`` transaction, every statement seeing the
        same committed state (what the index in memory is brought to).
        """
        try:
            with self.connect() as conn:
                try:
                    with conn.cursor() as cur:
                        if snapshot:
                            cur.execute(
                                "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
                            )
                        yield cur
                    conn.commit()
                except BaseException:
                    with suppress(Exception):  # a broken connection cannot roll back
                        conn.rollback()
                    raise
        except Exception as exc:
            away = outage_words(exc)
            if away is None:
                raise
            # Fixed words: the driver's own may name the host and port.
            raise StoreUnavailableError(
                f"the PostgreSQL server could not be reached ({away})"
            ) from exc

    def _prepare(self, create: bool) -> bool:
        """Whether the tables exist (made, or upgraded, first if ``create`` or if they are of
        an older layout). Checked once per store object."""
        if self._tables_ready:
            return True
        with self._transaction() as cur:
            if not create and not schema.tables_exist(cur):
                return False
            schema.ensure_tables(cur)
        self._tables_ready = True
        return True

    def _state(self, cur: Any, terms: Sequence[str]) -> tuple[CollectionState, dict[str, int]]:
        """The collection as this snapshot sees it, and the ids of those of ``terms`` its
        vocabulary has; raises _NoCollection if it has no row."""
        cur.execute(
            _STATE_AND_TERMS, {"name": self.collection, "terms": list(terms)}, prepare=False
        )
        rows = cur.fetchall()
        if not rows:
            raise _NoCollection(self.collection)
        collection, generation, kept_since = rows[0][:3]
        ids = {term: int(term_id) for *_, term, term_id in rows if term is not None}
        return CollectionState(int(collection), int(generation), int(kept_since)), ids

    def _writing(self, cur: Any) -> tuple[int, int, int]:
        """This collection's ``(id, new generation, term ids given so far)``, made if new,
        with the lock every writer of it takes until commit."""
        cur.execute(
            "INSERT INTO fulltext_collections (name, tokenizer) VALUES (%s, %s) "
            "ON CONFLICT (name) DO NOTHING",
            (self.collection, TOKENIZER_VERSION),
        )
        cur.execute("SELECT id FROM fulltext_collections WHERE name = %s", (self.collection,))
        collection = int(cur.fetchone()[0])
        cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", (schema.LOCK_NAMESPACE, collection))
        cur.execute(
            "UPDATE fulltext_collections SET generation = generation + 1 WHERE id = %s "
            "RETURNING generation, terms",
            (collection,),
        )
        generation, terms = cur.fetchone()
        return collection, int(generation), int(terms)

    # -- changes ----------------------------------------------------------------------------

    def add(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace ``chunks`` (the last of repeated ids wins), in one transaction."""
        latest = {c.id: c for c in chunks}
        if not latest:
            return
        # Tokenizing is the slow part and needs no connection: done first.
        prepared = [
            (_storable(c), json.dumps(_storable_metadata(c)), Counter(tokenize(c.text)))
            for c in latest.values()
        ]
        distinct = sorted(set().union(*(counts for _, _, counts in prepared)))
        self._prepare(create=True)
        with self._transaction() as cur:
            collection, generation, given = self._writing(cur)
            writes.remove_chunks(
                cur, collection, generation, "id = ANY(%(ids)s)", {"ids": list(latest)}
            )
            term_ids = writes.give_term_ids(cur, collection, distinct, given)
            cur.execute(
                "SELECT nextval(pg_get_serial_sequence('fulltext_chunks', 'doc')) "
                "FROM generate_series(1, %s)",
                (len(prepared),),
            )
            docs = [int(row[0]) for row in cur.fetchall()]
            lengths = [sum(counts.values()) for _, _, counts in prepared]
            with cur.copy(
                "COPY fulltext_chunks (doc, collection, id, source_id, text, metadata, length, "
                "generation, term_ids, term_freqs) FROM STDIN"
            ) as copy:
                for doc, length, (chunk, metadata, counts) in zip(
                    docs, lengths, prepared, strict=True
                ):
                    ids = np.fromiter((term_ids[t] for t in counts), dtype=schema.INT32)
                    freqs = np.fromiter(counts.values(), dtype=schema.INT32)
                    copy.write_row(
                        (
                            doc,
                            collection,
                            chunk.id,
                            chunk.source_id,
                            chunk.text,
                            metadata,
                            length,
                            generation,
                            schema.blob(ids),
                            schema.blob(freqs),
                        )
                    )
            writes.add_to_counts(cur, collection, len(prepared), sum(lengths))
        logger.debug("added %d chunks to %r", len(prepared), self)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove the chunks with these ids (unknown ids are ignored)."""
        unique = list(dict.fromkeys(ids))
        if unique:
            self._delete_where("id = ANY(%(ids)s)", {"ids": unique})

    def delete_source(self, source_id: str) -> None:
        """Remove every chunk of ``source_id``."""
        self._delete_where("source_id = %(source)s", {"source": source_id})

    def _delete_where(self, condition: str, params: dict[str, Any]) -> None:
        if not self._prepare(create=False):
            return
        with self._transaction() as cur:
            cur.execute("SELECT 1 FROM fulltext_collections WHERE name = %s", (self.collection,))
            if cur.fetchone() is not None:
                collection, generation, _ = self._writing(cur)
                writes.remove_chunks(cur, collection, generation, condition, params)

    def drop(self) -> None:
        """Delete this collection's chunks, vocabulary and counts."""
        if self._prepare(create=False):
            with self._transaction() as cur:
                cur.execute(
                    "SELECT id FROM fulltext_collections WHERE name = %s", (self.collection,)
                )
                row = cur.fetchone()
                if row is not None:
                    collection = int(row[0])
                    cur.execute(
                        "SELECT pg_advisory_xact_lock(%s, %s)", (schema.LOCK_NAMESPACE, collection)
                    )
                    for table in ("fulltext_removed", "fulltext_terms", "fulltext_chunks"):
                        cur.execute(f"DELETE FROM {table} WHERE collection = %s", (collection,))
                    cur.execute("DELETE FROM fulltext_collections WHERE id = %s", (collection,))
        with self._lock:
            self._mirror.forget()
        logger.info("dropped %r", self)

    # -- reading ----------------------------------------------------------------------------

    def ids(self) -> set[str]:
        """Every chunk id."""
        if not self._prepare(create=False):
            return set()
        with self._transaction() as cur:
            cur.execute(
                "SELECT ch.id FROM fulltext_chunks ch JOIN fulltext_collections c "
                "ON c.id = ch.collection WHERE c.name = %s",
                (self.collection,),
            )
            return {row[0] for row in cur.fetchall()}

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        """The stored chunks with these ids, by id (:class:`~ragloom.stores.base.ChunkLookup`)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        try:
            with self._snapshot([]) as (cur, state, _):
                return self._fetch(cur, state, wanted)
        except _NoCollection:
            return {}

    def count(self) -> int:
        """The number of chunks."""
        if not self._prepare(create=False):
            return 0
        with self._transaction() as cur:
            cur.execute(
                "SELECT documents FROM fulltext_collections WHERE name = %s", (self.collection,)
            )
            row = cur.fetchone()
            return int(row[0]) if row is not None else 0

    def ensure_index(self) -> None:
        """Bring the index in memory up to date, if this process has one (a process that
        only writes, as a worker does, never reads it in)."""
        if not self._mirror.loaded or not self._prepare(create=False):
            return
        with self._transaction(snapshot=True) as cur:
            try:
                state, _ = self._state(cur, [])
            except _NoCollection:
                return
            with self._lock:
                self._mirror.current(cur, state)

    @contextmanager
    def _snapshot(self, terms: Sequence[str]) -> Iterator[_Snapshot]:
        """A snapshot's cursor, the collection as it sees it and the ids of ``terms``;
        raises _NoCollection if the collection has no row."""
        if not self._prepare(create=False):
            raise _NoCollection(self.collection)
        with self._transaction(snapshot=True) as cur:
            state, term_ids = self._state(cur, terms)
            yield cur, state, term_ids

    def query(
        self, text: str, k: int, source_ids: Collection[str] | None = None
    ) -> list[tuple[Chunk, float]]:
        """The ``k`` chunks with the highest BM25 score for ``text`` (ties: smaller id first)."""
        if k <= 0 or (source_ids is not None and not source_ids):
            return []
        terms = query_terms(text)
        if not terms:
            return []
        try:
            with self._snapshot(terms) as (cur, state, term_ids):
                known = [term_ids[t] for t in terms if t in term_ids]
                if not known:
                    return []
                with self._lock:
                    hits = self._mirror.current(cur, state).search(known, k, source_ids)
                chunks = self._fetch(cur, state, [chunk_id for chunk_id, _ in hits])
        except _NoCollection:
            return []
        # The index may be ahead of this snapshot (another thread's newer one brought it
        # there): a chunk this snapshot does not hold yet is left out.
        return [(chunks[chunk_id], score) for chunk_id, score in hits if chunk_id in chunks]

    def find_terms(
        self, terms: Sequence[str], source_ids: Collection[str] | None = None
    ) -> dict[str, bool | None]:
        """Whether each term occurs in a chunk (of ``source_ids``), as the embedded store
        answers it (:func:`~ragloom.stores.bm25.terms.find_terms`): a phrase counts when a
        chunk holds its words in order."""
        if source_ids is not None and not source_ids:
            return dict.fromkeys(terms, False)
        asked = list(dict.fromkeys(terms))[: bm25_terms.MAX_LOOKUP_TERMS]
        words = list(dict.fromkeys(w for term in asked for w in tokenize(term)))
        vocabulary = TermVocabulary()
        try:
            with self._snapshot(words) as (cur, state, term_ids), self._lock:
                vocabulary.ids = term_ids

                def texts_of(ids: list[str]) -> list[str]:
                    return [chunk.text for chunk in self._fetch(cur, state, ids).values()]

                index = self._mirror.current(cur, state)
                return bm25_terms.find_terms(index, vocabulary, texts_of, terms, source_ids)
        except _NoCollection:  # no chunks: every term with a word is absent
            empty = SegmentedBM25()
            return bm25_terms.find_terms(empty, vocabulary, lambda _: [], terms, source_ids)

    def _fetch(self, cur: Any, state: CollectionState, ids: list[str]) -> dict[str, Chunk]:
        """The chunks with these ids, as the snapshot sees them (the index's state)."""
        if not ids:
            return {}
        cur.execute(
            "SELECT id, text, metadata FROM fulltext_chunks WHERE collection = %s AND id = ANY(%s)",
            (state.id, ids),
            prepare=False,
        )
        return {
            chunk_id: Chunk.from_metadata(chunk_id, text, metadata)
            for chunk_id, text, metadata in cur.fetchall()
        }
