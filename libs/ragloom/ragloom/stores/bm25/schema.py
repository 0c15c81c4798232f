"""The BM25 store's SQLite file: its tables, transactions and stored term arrays.

One file holds the chunks, each chunk's term ids and counts (int32 blobs), the vocabulary
and a ``meta`` table (store key, generation, tokenizer version); every change is one
transaction that also bumps the generation.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator

import numpy as np

DB_NAME = "chunks.sqlite3"
# Folders of bm25s indexes saved by the older format of this store: removed on upgrade.
OLD_INDEX_PREFIX = "index-"
INT32 = np.dtype("<i4")  # term ids and counts as stored (fixed byte order: portable files)
# SQLite's limit on ``?`` parameters is 32766 (3.32+); stay far below it.
BATCH = 500

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS chunks (
        id TEXT PRIMARY KEY,
        source_id TEXT NOT NULL,
        text TEXT NOT NULL,
        metadata TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS chunks_source_id ON chunks(source_id)",
    """CREATE TABLE IF NOT EXISTS chunk_terms (
        id TEXT PRIMARY KEY,
        source_id TEXT NOT NULL,
        term_ids BLOB NOT NULL,
        term_freqs BLOB NOT NULL
    )""",
    "CREATE TABLE IF NOT EXISTS terms (term TEXT PRIMARY KEY, id INTEGER UNIQUE NOT NULL)",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO meta(key, value) VALUES ('generation', 0)",
    "INSERT OR IGNORE INTO meta(key, value) VALUES ('store', random() & 9223372036854775807)",
)
BUMP = "UPDATE meta SET value = value + 1 WHERE key = 'generation'"

Version = tuple[int, int]  # (store, generation) of the database


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection, *, write: bool) -> Iterator[None]:
    """BEGIN ... COMMIT, or ROLLBACK on error. A write transaction takes the database's
    write lock at once (IMMEDIATE), so what it reads stays true until it commits."""
    conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def is_current(conn: sqlite3.Connection, tokenizer_version: int) -> bool:
    """Whether the database exists in this format and ``tokenizer_version`` (a cheap read)."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'tokenizer'").fetchone()
    except sqlite3.OperationalError:  # no meta table: a new (or foreign) file
        return False
    return row is not None and row[0] == tokenizer_version


def version_of(conn: sqlite3.Connection) -> Version:
    """(store, generation): random per database, and bumped by every change."""
    meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('store', 'generation')"))
    return int(meta["store"]), int(meta["generation"])


def blob(values: np.ndarray) -> bytes:
    return values.astype(INT32, copy=False).tobytes()


def decoded(rows: Iterable[tuple[str, bytes]]) -> dict[str, np.ndarray]:
    """``{id: term ids}`` from ``(id, term_ids blob)`` rows."""
    return {chunk_id: np.frombuffer(blob, dtype=INT32) for chunk_id, blob in rows}
