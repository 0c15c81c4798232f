"""A :class:`~ragloom.stores.base.FullTextStore` kept in PostgreSQL and scored by BM25 there.

Every process and machine of a deployment sees the same store, at once: there is no index
in memory to load or keep in step, and each add or delete is one transaction. The terms are
:func:`~ragloom.stores.bm25.tokenizer.tokenize`'s, so CJK text is found by its character
bigrams as in the embedded store, and the scores are the embedded store's (bm25s's Lucene
BM25, k1 = 1.5, b = 0.75, idf over the live chunks), computed by one SQL statement.

Four tables, shared by every index (a ``collection`` each), made on first use:

- ``fulltext_collections(id, name, documents, total_length)``: a collection's chunk count
  and term count, which BM25's idf and length norm need;
- ``fulltext_chunks(doc, collection, id, source_id, text, metadata, length)``: the chunks,
  ``doc`` a number standing for the chunk in the postings;
- ``fulltext_postings(collection, term, doc, tf, length)``: a row per distinct term of a
  chunk, keyed (and covered, so a search reads the index alone) by collection and term;
- ``fulltext_terms(collection, term, df)``: how many chunks hold each term.

PostgreSQL's own ``tsvector`` ranking (``ts_rank``) was not used: it has no inverse document
frequency, so a word in every chunk weighs as much as a rare name (docs/deploy.md).
Writers of one collection take a transaction-scoped advisory lock, so the counts stay exact
when several processes index into it; readers take none.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import replace
from typing import Any

from ragloom.schema import Chunk
from ragloom.storable import storable_text
from ragloom.stores.base import FullTextStore
from ragloom.stores.bm25 import terms as bm25_terms
from ragloom.stores.bm25.index import K1, B
from ragloom.stores.bm25.terms import holds_in_order
from ragloom.stores.bm25.tokenizer import tokenize

__all__ = ["ConnectionFactory", "PostgresFullTextStore"]

logger = logging.getLogger(__name__)

ConnectionFactory = Callable[[], AbstractContextManager[Any]]
"""Gives a psycopg 3 connection to PostgreSQL (not in autocommit mode, no transaction open)
for the length of a ``with`` block: a pool's connection, or ``psycopg.connect(url)``."""

# Two-int advisory lock keys: (namespace, collection id); 0 guards the tables' creation.
_LOCK_NAMESPACE = 0x7261_6700  # "rag\0"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS fulltext_collections (
    id serial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    documents bigint NOT NULL DEFAULT 0,
    total_length bigint NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS fulltext_chunks (
    doc bigserial PRIMARY KEY,
    collection integer NOT NULL,
    id text NOT NULL,
    source_id text NOT NULL,
    text text NOT NULL,
    metadata jsonb NOT NULL,
    length integer NOT NULL,
    UNIQUE (collection, id)
);
CREATE INDEX IF NOT EXISTS fulltext_chunks_source ON fulltext_chunks (collection, source_id);
CREATE TABLE IF NOT EXISTS fulltext_postings (
    collection integer NOT NULL,
    term text NOT NULL,
    doc bigint NOT NULL,
    tf integer NOT NULL,
    length integer NOT NULL,
    PRIMARY KEY (collection, term, doc) INCLUDE (tf, length)
);
CREATE INDEX IF NOT EXISTS fulltext_postings_doc ON fulltext_postings (doc);
CREATE TABLE IF NOT EXISTS fulltext_terms (
    collection integer NOT NULL,
    term text NOT NULL,
    df integer NOT NULL,
    PRIMARY KEY (collection, term)
);
"""

# BM25 of every chunk holding a query term, as bm25s's Lucene variant scores it. The best
# k are cut before their rows are read (joining first read every scored chunk: 0.8 s at
# 100k chunks), with every chunk tied with the k-th, so that ties go to the smaller id as in
# the embedded store. Scores are compared to 9 decimals: the same terms summed in another
# order differ in their last bits.
_SEARCH = """
WITH stats AS (
    SELECT documents::float8 AS n, total_length::float8 / documents AS average
    FROM fulltext_collections WHERE id = %(collection)s AND documents > 0
), query AS (
    SELECT t.term, ln(1 + (stats.n - t.df + 0.5) / (t.df + 0.5)) AS idf
    FROM fulltext_terms t, stats
    WHERE t.collection = %(collection)s AND t.term = ANY(%(terms)s) AND t.df > 0
), scored AS (
    SELECT p.doc, sum(query.idf * p.tf
        / (%(k1)s * ((1 - %(b)s) + %(b)s * p.length / stats.average) + p.tf)) AS score
    FROM query JOIN fulltext_postings p
        ON p.collection = %(collection)s AND p.term = query.term, stats
    {source_filter}
    GROUP BY p.doc
), ranked AS (
    SELECT doc, score, round(score::numeric, 9) AS rank FROM scored
    ORDER BY rank DESC
    FETCH FIRST %(k)s ROWS WITH TIES
)
SELECT c.id, c.text, c.metadata, ranked.score
FROM ranked JOIN fulltext_chunks c ON c.doc = ranked.doc
ORDER BY ranked.rank DESC, c.id
LIMIT %(k)s
"""

_OF_SOURCES = """p.doc IN (
        SELECT doc FROM fulltext_chunks
        WHERE collection = %(collection)s AND source_id = ANY(%(sources)s))"""


def _storable(chunk: Chunk) -> Chunk:
    """``chunk`` with text PostgreSQL takes (its terms are tokenized from the original; ids
    are Ragloom's own and never hold NUL)."""
    return replace(chunk, text=storable_text(chunk.text)) if "\x00" in chunk.text else chunk


def _storable_metadata(chunk: Chunk) -> dict[str, Any]:
    return {k: storable_text(v) if isinstance(v, str) else v for k, v in chunk.metadata().items()}


class PostgresFullTextStore(FullTextStore):
    """The chunks of one ``collection`` (an index) in PostgreSQL, searched by BM25 in SQL.

    ``connect`` gives a connection per call (see :data:`ConnectionFactory`), so the store is
    safe to share between threads. Nothing is created until the store is first used.
    """

    def __init__(self, connect: ConnectionFactory, collection: str) -> None:
        self.connect = connect
        self.collection = collection
        self._tables_exist = False  # once seen, tables are never dropped

    def __repr__(self) -> str:
        return f"PostgresFullTextStore(collection={self.collection!r})"

    # -- connections ------------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        """A cursor in one transaction: committed at the end of the block, else rolled back."""
        with self.connect() as conn:
            try:
                with conn.cursor() as cur:
                    yield cur
                conn.commit()
            except BaseException:
                with suppress(Exception):  # a broken connection cannot roll back: it is gone
                    conn.rollback()
                raise

    def _collection_id(self, cur: Any, create: bool) -> int | None:
        """This collection's id (None if it has none), creating the tables and its row if
        ``create``. Looked up in every transaction: another process may drop it."""
        if not self._tables_exist:
            cur.execute("SELECT to_regclass('fulltext_postings') IS NOT NULL")
            if not cur.fetchone()[0]:
                if not create:
                    return None
                # CREATE TABLE IF NOT EXISTS is not safe against itself in two transactions.
                cur.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_LOCK_NAMESPACE,))
                cur.execute(_SCHEMA)
            self._tables_exist = True
        if create:
            cur.execute(
                "INSERT INTO fulltext_collections (name) VALUES (%s) ON CONFLICT (name) DO NOTHING",
                (self.collection,),
            )
        cur.execute("SELECT id FROM fulltext_collections WHERE name = %s", (self.collection,))
        row = cur.fetchone()
        return None if row is None else int(row[0])

    def _writing(self, cur: Any) -> int:
        """This collection's id, with the lock every writer of it takes until commit."""
        collection = self._collection_id(cur, create=True)
        assert collection is not None
        cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_LOCK_NAMESPACE, collection))
        return collection

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
        document_frequency: Counter[str] = Counter()
        for _, _, counts in prepared:
            document_frequency.update(counts.keys())
        with self._transaction() as cur:
            collection = self._writing(cur)
            self._remove(cur, collection, "id = ANY(%(ids)s)", {"ids": list(latest)})
            cur.execute(
                "SELECT nextval(pg_get_serial_sequence('fulltext_chunks', 'doc')) "
                "FROM generate_series(1, %s)",
                (len(prepared),),
            )
            docs = [int(row[0]) for row in cur.fetchall()]
            lengths = [sum(counts.values()) for _, _, counts in prepared]
            with cur.copy(
                "COPY fulltext_chunks (doc, collection, id, source_id, text, metadata, length) "
                "FROM STDIN"
            ) as copy:
                for doc, length, (chunk, metadata, _) in zip(docs, lengths, prepared, strict=True):
                    copy.write_row(
                        (doc, collection, chunk.id, chunk.source_id, chunk.text, metadata, length)
                    )
            with cur.copy(
                "COPY fulltext_postings (collection, term, doc, tf, length) FROM STDIN"
            ) as copy:
                for doc, length, (_, _, counts) in zip(docs, lengths, prepared, strict=True):
                    for term, tf in counts.items():
                        copy.write_row((collection, term, doc, tf, length))
            self._count_terms(cur, collection, document_frequency, len(prepared), sum(lengths))
        logger.debug("added %d chunks to %r", len(prepared), self)

    @staticmethod
    def _count_terms(
        cur: Any, collection: int, document_frequency: Counter[str], added: int, length: int
    ) -> None:
        """Add chunks' terms and lengths to the counts BM25 reads."""
        terms = sorted(document_frequency)  # one order for every writer
        cur.execute(
            "INSERT INTO fulltext_terms (collection, term, df) "
            "SELECT %(collection)s, term, df FROM unnest(%(terms)s::text[], %(dfs)s::int[]) "
            "AS given(term, df) ON CONFLICT (collection, term) "
            "DO UPDATE SET df = fulltext_terms.df + excluded.df",
            {
                "collection": collection,
                "terms": terms,
                "dfs": [document_frequency[t] for t in terms],
            },
        )
        cur.execute(
            "UPDATE fulltext_collections SET documents = documents + %s, "
            "total_length = total_length + %s WHERE id = %s",
            (added, length, collection),
        )

    def delete(self, ids: Iterable[str]) -> None:
        """Remove the chunks with these ids (unknown ids are ignored)."""
        unique = list(dict.fromkeys(ids))
        if unique:
            self._delete_where("id = ANY(%(ids)s)", {"ids": unique})

    def delete_source(self, source_id: str) -> None:
        """Remove every chunk of ``source_id``."""
        self._delete_where("source_id = %(source)s", {"source": source_id})

    def _delete_where(self, condition: str, params: dict[str, Any]) -> None:
        with self._transaction() as cur:
            collection = self._collection_id(cur, create=False)
            if collection is not None:
                self._writing(cur)
                self._remove(cur, collection, condition, params)

    @staticmethod
    def _remove(cur: Any, collection: int, condition: str, params: dict[str, Any]) -> None:
        """Delete the chunks of ``collection`` matching ``condition`` with their postings,
        and take them out of the counts."""
        cur.execute(
            f"DELETE FROM fulltext_chunks WHERE collection = %(collection)s AND {condition} "
            "RETURNING doc, length",
            {"collection": collection, **params},
        )
        gone = cur.fetchall()
        if not gone:
            return
        cur.execute(
            """WITH gone AS (
                   DELETE FROM fulltext_postings WHERE doc = ANY(%(docs)s) RETURNING term
               ), counted AS (SELECT term, count(*) AS n FROM gone GROUP BY term ORDER BY term)
               UPDATE fulltext_terms t SET df = t.df - counted.n FROM counted
               WHERE t.collection = %(collection)s AND t.term = counted.term""",
            {"collection": collection, "docs": [doc for doc, _ in gone]},
        )
        cur.execute("DELETE FROM fulltext_terms WHERE collection = %s AND df <= 0", (collection,))
        cur.execute(
            "UPDATE fulltext_collections SET documents = documents - %s, "
            "total_length = total_length - %s WHERE id = %s",
            (len(gone), sum(length for _, length in gone), collection),
        )

    def drop(self) -> None:
        """Delete this collection's chunks, postings, terms and counts."""
        with self._transaction() as cur:
            collection = self._collection_id(cur, create=False)
            if collection is None:
                return
            self._writing(cur)
            for table in ("fulltext_postings", "fulltext_terms", "fulltext_chunks"):
                cur.execute(f"DELETE FROM {table} WHERE collection = %s", (collection,))
            cur.execute("DELETE FROM fulltext_collections WHERE id = %s", (collection,))
        logger.info("dropped %r", self)

    # -- reading ----------------------------------------------------------------------------

    def ids(self) -> set[str]:
        """Every chunk id."""
        with self._transaction() as cur:
            collection = self._collection_id(cur, create=False)
            if collection is None:
                return set()
            cur.execute("SELECT id FROM fulltext_chunks WHERE collection = %s", (collection,))
            return {row[0] for row in cur.fetchall()}

    def count(self) -> int:
        """The number of chunks."""
        with self._transaction() as cur:
            collection = self._collection_id(cur, create=False)
            if collection is None:
                return 0
            cur.execute("SELECT documents FROM fulltext_collections WHERE id = %s", (collection,))
            row = cur.fetchone()
            return int(row[0]) if row is not None else 0

    def query(
        self, text: str, k: int, source_ids: Collection[str] | None = None
    ) -> list[tuple[Chunk, float]]:
        """The ``k`` chunks with the highest BM25 score for ``text`` (ties: smaller id first)."""
        if k <= 0 or (source_ids is not None and not source_ids):
            return []
        # A term repeated in the question counts once, as in the embedded store.
        terms = list(dict.fromkeys(tokenize(text)))
        if not terms:
            return []
        with self._transaction() as cur:
            collection = self._collection_id(cur, create=False)
            if collection is None:
                return []
            params = {
                "collection": collection,
                "terms": terms,
                "k": k,
                "k1": K1,
                "b": B,
            }
            source_filter = ""
            if source_ids is not None:
                source_filter, params["sources"] = f"WHERE {_OF_SOURCES}", list(source_ids)
            cur.execute(_SEARCH.format(source_filter=source_filter), params)
            rows = cur.fetchall()
        return [
            (Chunk.from_metadata(chunk_id, chunk_text, metadata), float(score))
            for chunk_id, chunk_text, metadata, score in rows
        ]

    def find_terms(
        self, terms: Sequence[str], source_ids: Collection[str] | None = None
    ) -> dict[str, bool | None]:
        """Whether each term occurs in a chunk (of ``source_ids``), as the embedded store
        answers it (:func:`~ragloom.stores.bm25.terms.find_terms`): a phrase counts when a
        chunk holds its words in order."""
        if source_ids is not None and not source_ids:
            return dict.fromkeys(terms, False)
        found: dict[str, bool | None] = {}
        with self._transaction() as cur:
            collection = self._collection_id(cur, create=False)
            for number, term in enumerate(dict.fromkeys(terms)):
                words = tokenize(term)
                if number >= bm25_terms.MAX_LOOKUP_TERMS or not words:
                    found[term] = None
                elif collection is None:
                    found[term] = False
                else:
                    found[term] = self._holds(cur, collection, words, source_ids)
        return found

    @staticmethod
    def _holds(
        cur: Any, collection: int, words: list[str], source_ids: Collection[str] | None
    ) -> bool:
        distinct = list(dict.fromkeys(words))
        cur.execute(
            "SELECT count(*) FROM fulltext_terms "
            "WHERE collection = %s AND term = ANY(%s) AND df > 0",
            (collection, distinct),
        )
        if cur.fetchone()[0] < len(distinct):
            return False
        if len(words) == 1 and source_ids is None:
            return True
        params: dict[str, Any] = {
            "collection": collection,
            "words": distinct,
            "n": len(distinct),
            "limit": bm25_terms.MAX_PHRASE_CANDIDATES + 1,
        }
        source_filter = ""
        if source_ids is not None:
            source_filter, params["sources"] = f"AND {_OF_SOURCES}", list(source_ids)
        cur.execute(
            "SELECT c.text FROM fulltext_chunks c WHERE c.doc IN ("
            "  SELECT p.doc FROM fulltext_postings p"
            "  WHERE p.collection = %(collection)s AND p.term = ANY(%(words)s)"
            f"  {source_filter} GROUP BY p.doc HAVING count(*) = %(n)s LIMIT %(limit)s)",
            params,
        )
        texts = [row[0] for row in cur.fetchall()]
        if not texts or len(words) == 1:
            return bool(texts)
        read = texts[: bm25_terms.MAX_PHRASE_CANDIDATES]
        return any(holds_in_order(tokenize(t), words) for t in read) or len(texts) > len(read)
