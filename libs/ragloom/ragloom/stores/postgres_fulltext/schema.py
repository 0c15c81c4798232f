"""The PostgreSQL full-text store's tables: made on first use, and upgraded in place.

Four tables, shared by every index (a ``collection`` each):

- ``fulltext_collections``: a collection's chunk count and term count, its ``generation``
  (bumped by every change, under the collection's write lock), ``kept_since`` (every
  removal after that generation is still in ``fulltext_removed``), the term ids given so
  far and the :data:`~ragloom.stores.bm25.tokenizer.TOKENIZER_VERSION` they were made with;
- ``fulltext_chunks``: the chunks with their distinct term ids and counts (little-endian
  int32 arrays, as the embedded store keeps them) and the generation that added them;
- ``fulltext_terms``: each collection's vocabulary, term to id, ids ``0, 1, 2, ...``;
- ``fulltext_removed``: the chunks removed in the last :data:`KEEP_GENERATIONS`
  generations (their ids and term ids), so that a process's index in memory catches up
  with a change without reading everything again.

The first layout (``fulltext_postings``, a row per term of a chunk, scored by SQL) is
upgraded on first use: every chunk is tokenized again into term ids, in one transaction.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Any

import numpy as np

from ragloom.stores.bm25.tokenizer import TOKENIZER_VERSION, tokenize

__all__ = [
    "INT32",
    "KEEP_GENERATIONS",
    "LOCK_NAMESPACE",
    "blob",
    "ensure_tables",
    "tables_exist",
]

logger = logging.getLogger(__name__)

#: Two-int advisory lock keys: (namespace, collection id); 0 guards the tables themselves.
LOCK_NAMESPACE = 0x7261_6700  # "rag\0"
#: Removals are kept this many generations; an index in memory further behind reloads.
KEEP_GENERATIONS = 256
INT32 = np.dtype("<i4")

_TABLES = """
CREATE TABLE fulltext_collections (
    id serial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    documents bigint NOT NULL DEFAULT 0,
    total_length bigint NOT NULL DEFAULT 0,
    generation bigint NOT NULL DEFAULT 0,
    kept_since bigint NOT NULL DEFAULT 0,
    terms integer NOT NULL DEFAULT 0,
    tokenizer integer NOT NULL
);
CREATE TABLE fulltext_chunks (
    doc bigserial PRIMARY KEY,
    collection integer NOT NULL,
    id text NOT NULL,
    source_id text NOT NULL,
    text text NOT NULL,
    metadata jsonb NOT NULL,
    length integer NOT NULL,
    generation bigint NOT NULL,
    term_ids bytea NOT NULL,
    term_freqs bytea NOT NULL,
    UNIQUE (collection, id)
);
CREATE INDEX fulltext_chunks_source ON fulltext_chunks (collection, source_id);
"""

# Parts the first layout lacks entirely, made by both a new install and the upgrade.
_NEW_PARTS = """
CREATE INDEX fulltext_chunks_generation ON fulltext_chunks (collection, generation);
CREATE TABLE fulltext_terms (
    collection integer NOT NULL,
    term text NOT NULL,
    term_id integer NOT NULL,
    PRIMARY KEY (collection, term),
    UNIQUE (collection, term_id)
);
CREATE TABLE fulltext_removed (
    collection integer NOT NULL,
    generation bigint NOT NULL,
    doc bigint NOT NULL,
    id text NOT NULL,
    term_ids bytea NOT NULL,
    PRIMARY KEY (collection, generation, doc)
);
"""

_UPGRADE_FIRST_LAYOUT = """
ALTER TABLE fulltext_collections
    ADD COLUMN generation bigint NOT NULL DEFAULT 0,
    ADD COLUMN kept_since bigint NOT NULL DEFAULT 0,
    ADD COLUMN terms integer NOT NULL DEFAULT 0,
    ADD COLUMN tokenizer integer NOT NULL DEFAULT 0;
ALTER TABLE fulltext_collections ALTER COLUMN tokenizer DROP DEFAULT;
ALTER TABLE fulltext_chunks
    ADD COLUMN generation bigint NOT NULL DEFAULT 0,
    ADD COLUMN term_ids bytea NOT NULL DEFAULT '',
    ADD COLUMN term_freqs bytea NOT NULL DEFAULT '';
ALTER TABLE fulltext_chunks ALTER COLUMN generation DROP DEFAULT,
    ALTER COLUMN term_ids DROP DEFAULT, ALTER COLUMN term_freqs DROP DEFAULT;
DROP TABLE fulltext_postings;
DROP TABLE fulltext_terms;
"""


def blob(values: np.ndarray) -> bytes:
    """An int array as stored (int32, little-endian)."""
    return values.astype(INT32, copy=False).tobytes()


def tables_exist(cur: Any) -> bool:
    """Whether the tables exist in any layout (the first one included)."""
    cur.execute("SELECT to_regclass('fulltext_chunks') IS NOT NULL")
    return bool(cur.fetchone()[0])


def ensure_tables(cur: Any) -> None:
    """Make the tables, or bring them to this layout and tokenizer, in ``cur``'s
    transaction (the caller commits). Safe against other processes doing the same."""
    if _is_current(cur):
        return
    # CREATE TABLE IF NOT EXISTS is not safe against itself in two transactions: one lock.
    cur.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_NAMESPACE,))
    cur.execute(
        "SELECT to_regclass('fulltext_chunks') IS NOT NULL, "
        "to_regclass('fulltext_removed') IS NOT NULL"
    )
    made, current = cur.fetchone()
    if not made:
        cur.execute(_TABLES + _NEW_PARTS)
        logger.info("made the PostgreSQL full-text tables")
        return
    if not current:
        cur.execute(_UPGRADE_FIRST_LAYOUT + _NEW_PARTS)
    cur.execute(
        "SELECT id, name FROM fulltext_collections WHERE tokenizer <> %s ORDER BY id",
        (TOKENIZER_VERSION,),
    )
    for collection, name in cur.fetchall():
        _tokenize_again(cur, collection, name)


def _is_current(cur: Any) -> bool:
    cur.execute("SELECT to_regclass('fulltext_removed') IS NOT NULL")
    if not cur.fetchone()[0]:
        return False
    cur.execute(
        "SELECT NOT EXISTS (SELECT 1 FROM fulltext_collections WHERE tokenizer <> %s)",
        (TOKENIZER_VERSION,),
    )
    return bool(cur.fetchone()[0])


def _tokenize_again(cur: Any, collection: int, name: str) -> None:
    """Give every chunk of ``collection`` term ids from a new vocabulary (after an upgrade,
    or a change of tokenizer): one pass over its texts, one update."""
    started = time.perf_counter()
    cur.execute(
        "UPDATE fulltext_collections SET generation = generation + 1 WHERE id = %s "
        "RETURNING generation",
        (collection,),
    )
    generation = int(cur.fetchone()[0])
    vocabulary: dict[str, int] = {}
    rows: list[tuple[int, int, bytes, bytes]] = []
    with cur.connection.cursor(name="fulltext_tokenize_again") as texts:
        texts.execute(
            "SELECT doc, text FROM fulltext_chunks WHERE collection = %s ORDER BY doc",
            (collection,),
        )
        for doc, text in texts:
            counts = Counter(tokenize(text))
            ids = [vocabulary.setdefault(term, len(vocabulary)) for term in counts]
            freqs = np.fromiter(counts.values(), dtype=INT32, count=len(counts))
            rows.append((doc, int(freqs.sum()), blob(np.asarray(ids)), blob(freqs)))
    cur.execute(
        "CREATE TEMPORARY TABLE fulltext_retokenized "
        "(doc bigint, length integer, term_ids bytea, term_freqs bytea) ON COMMIT DROP"
    )
    with cur.copy("COPY fulltext_retokenized FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    cur.execute(
        "UPDATE fulltext_chunks c SET length = r.length, term_ids = r.term_ids, "
        "term_freqs = r.term_freqs, generation = %s FROM fulltext_retokenized r "
        "WHERE c.doc = r.doc",
        (generation,),
    )
    cur.execute("DROP TABLE fulltext_retokenized")
    cur.execute("DELETE FROM fulltext_terms WHERE collection = %s", (collection,))
    cur.execute("DELETE FROM fulltext_removed WHERE collection = %s", (collection,))
    with cur.copy("COPY fulltext_terms (collection, term, term_id) FROM STDIN") as copy:
        for term, term_id in vocabulary.items():
            copy.write_row((collection, term, term_id))
    # No removal kept since this generation: any index in memory reloads.
    cur.execute(
        "UPDATE fulltext_collections SET documents = %s, total_length = %s, kept_since = %s, "
        "terms = %s, tokenizer = %s WHERE id = %s",
        (
            len(rows),
            sum(r[1] for r in rows),
            generation,
            len(vocabulary),
            TOKENIZER_VERSION,
            collection,
        ),
    )
    logger.warning(
        "tokenized the %d chunks of full-text collection %r again in %.1f s",
        len(rows),
        name,
        time.perf_counter() - started,
    )
