"""Bringing a BM25 store's database to the current format and tokenizer.

A database of the older format (no ``chunk_terms``; bm25s indexes in ``index-*`` folders)
or of another :data:`~ragloom.stores.bm25.tokenizer.TOKENIZER_VERSION` has its chunks
tokenized again, once, inside the write transaction that opens it: of two processes
opening it, the second finds the work done.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections import Counter
from pathlib import Path

from ragloom.stores.bm25 import schema
from ragloom.stores.bm25.tokenizer import TOKENIZER_VERSION, tokenize
from ragloom.stores.bm25.vocab import TermVocabulary

__all__ = ["repair_terms", "upgrade"]

logger = logging.getLogger(__name__)

_WITHOUT_TERMS = "NOT EXISTS (SELECT 1 FROM chunk_terms t WHERE t.id = chunks.id)"


def upgrade(conn: sqlite3.Connection, vocab: TermVocabulary, path: Path) -> bool:
    """Create the tables, or bring an older database to this format and tokenizer.

    Runs in the caller's write transaction. Returns whether anything had to change.
    """
    for statement in schema.SCHEMA:
        conn.execute(statement)
    stored = conn.execute("SELECT value FROM meta WHERE key = 'tokenizer'").fetchone()
    if stored is not None and stored[0] == TOKENIZER_VERSION:
        return False
    # Term ids of another tokenizer version, or none yet (the older format).
    conn.execute("DELETE FROM chunk_terms")
    conn.execute("DELETE FROM terms")
    # Term ids are numbered again from 0: a new store key tells every process holding
    # a vocabulary or an index of this database (this one included) to drop them.
    conn.execute("UPDATE meta SET value = random() & 9223372036854775807 WHERE key = 'store'")
    conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES ('tokenizer', ?)", (TOKENIZER_VERSION,)
    )
    repair_terms(conn, vocab, path)
    return True


def repair_terms(conn: sqlite3.Connection, vocab: TermVocabulary, path: Path) -> None:
    """Tokenize the chunks that have no ``chunk_terms`` row and drop rows whose chunk is
    gone (in the caller's write transaction).

    Only an upgrade leaves any, or an older Ragloom writing to this file since.
    """
    # NOT EXISTS: one primary-key lookup per row (NOT IN would copy the other table).
    orphans = conn.execute(
        "DELETE FROM chunk_terms WHERE NOT EXISTS "
        "(SELECT 1 FROM chunks WHERE chunks.id = chunk_terms.id)"
    ).rowcount
    missing = conn.execute(f"SELECT COUNT(*) FROM chunks WHERE {_WITHOUT_TERMS}").fetchone()[0]
    if missing:
        logger.info("tokenizing %d chunks of %s, once", missing, path)
    started = time.perf_counter()
    vocab.sync(conn, schema.version_of(conn)[0])
    new_terms: list[tuple[str, int]] = []
    last = -(2**63)
    while missing:  # in batches by rowid: never hold every text at once
        rows = conn.execute(
            "SELECT rowid, id, source_id, text FROM chunks "
            f"WHERE rowid > ? AND {_WITHOUT_TERMS} ORDER BY rowid LIMIT 1000",
            (last,),
        ).fetchall()
        if not rows:
            break
        inserts = []
        for _, chunk_id, source_id, text in rows:
            term_ids, freqs = vocab.assign(Counter(tokenize(text)), new_terms)
            inserts.append((chunk_id, source_id, schema.blob(term_ids), schema.blob(freqs)))
        conn.executemany(
            "INSERT INTO chunk_terms(id, source_id, term_ids, term_freqs) VALUES (?, ?, ?, ?)",
            inserts,
        )
        last = rows[-1][0]
    conn.executemany("INSERT INTO terms(term, id) VALUES (?, ?)", new_terms)
    if missing or orphans:
        conn.execute(schema.BUMP)
        logger.info(
            "tokenized %d chunks (and dropped %d stale term rows) of %s in %.1f s",
            missing,
            orphans,
            path,
            time.perf_counter() - started,
        )
