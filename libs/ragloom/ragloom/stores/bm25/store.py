"""A :class:`~ragloom.stores.base.FullTextStore` scored by BM25, kept in one SQLite file.

``chunks.sqlite3`` under the store's folder holds everything, so each add or delete is one
SQLite transaction and a crash never leaves the store half updated:

- ``chunks(id, source_id, text, metadata)``: the chunks;
- ``chunk_terms(id, source_id, term_ids, term_freqs)``: each chunk's distinct term ids and
  their counts (little-endian int32 arrays), computed once when the chunk is added. A table
  of its own, so loading the index reads these small rows and not the texts (and a chunk
  row with its terms would no longer fit two to a page, doubling the file);
- ``terms(term, id)``: the vocabulary, ids ``0, 1, 2, ...`` in order of first use;
- ``meta``: ``generation``, bumped by every change; ``store``, random per database (and
  drawn again when term ids are renumbered); ``tokenizer``, the :data:`TOKENIZER_VERSION`
  the term ids were made with. A database of another version (or of the older format
  without ``chunk_terms``, with bm25s indexes saved in ``index-*`` folders) is tokenized
  again on open, once.

The index is in memory (:class:`~ragloom.stores.bm25.index.SegmentedBM25`), loaded on the
first query from the stored term ids (no tokenizing). This store's own writes update it in
place, in time proportional to the batch; a change by another process (another store object
on the same folder, the CLI while the app runs) shows as a generation this store did not
make, and the next query reloads it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.schema import Chunk
from ragloom.stores.base import FullTextStore
from ragloom.stores.bm25 import schema
from ragloom.stores.bm25.index import DocTerms, SegmentedBM25
from ragloom.stores.bm25.schema import Version
from ragloom.stores.bm25.terms import find_terms
from ragloom.stores.bm25.tokenizer import TOKENIZER_VERSION, query_terms, tokenize
from ragloom.stores.bm25.upgrade import repair_terms, upgrade
from ragloom.stores.bm25.vocab import TermVocabulary

__all__ = ["TOKENIZER_VERSION", "BM25Store", "tokenize"]

logger = logging.getLogger(__name__)


class BM25Store(FullTextStore):
    """Chunks and their terms in a SQLite file under ``path``, searched by BM25 in memory.

    Safe to share between threads (one lock around everything). Nothing is created on disk
    until the store is first used, and nothing is loaded until the first query.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._forget()

    def __repr__(self) -> str:
        return f"BM25Store({str(self.path)!r})"

    def _forget(self) -> None:
        """Drop the vocabulary and index; both are read again from the database when needed."""
        self._vocab = TermVocabulary()
        self._index: SegmentedBM25 | None = None
        self._index_version: Version | None = None  # the database state _index reflects

    # -- database -------------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.mkdir(parents=True, exist_ok=True)
            # One connection shared by all threads, serialised by self._lock; autocommit,
            # with explicit transactions (see _transaction).
            conn = sqlite3.connect(
                self.path / schema.DB_NAME, check_same_thread=False, isolation_level=None
            )
            try:
                if not schema.is_current(conn, TOKENIZER_VERSION):
                    with self._writing(conn):
                        upgraded = upgrade(conn, self._vocab, self.path)
                    if upgraded:
                        for child in self.path.glob(f"*{schema.OLD_INDEX_PREFIX}*"):
                            shutil.rmtree(child, ignore_errors=True)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    @contextlib.contextmanager
    def _writing(self, conn: sqlite3.Connection) -> Iterator[None]:
        """A write transaction. If it fails, the vocabulary and index are forgotten, as
        they may hold terms or documents that were rolled back."""
        try:
            with schema.transaction(conn, write=True):
                yield
        except BaseException:
            self._forget()
            raise

    def _sync_vocab(self, conn: sqlite3.Connection, store: int) -> None:
        """Bring the vocabulary up to date (in a transaction); renumbered term ids also
        invalidate the index."""
        if self._vocab.sync(conn, store):
            self._index = self._index_version = None

    def _live_index(self, version: Version) -> SegmentedBM25 | None:
        """The index, if it reflects ``version`` exactly: then a write may update it."""
        return self._index if self._index_version == version else None

    def close(self) -> None:
        """Close the database file; the store reopens it when used again."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- changes --------------------------------------------------------------------------

    def add(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace ``chunks`` (the last of repeated ids wins)."""
        if not chunks:
            return
        latest = {c.id: c for c in chunks}  # the last of repeated ids wins
        # Tokenizing is the slow part and needs nothing shared: done before taking the lock.
        prepared = [
            (c, json.dumps(c.metadata()), Counter(tokenize(c.text))) for c in latest.values()
        ]
        with self._lock:
            conn = self._db()
            with self._writing(conn):
                version = schema.version_of(conn)
                self._sync_vocab(conn, version[0])
                index = self._live_index(version)
                replaced: dict[str, np.ndarray] | None = {}
                if index is not None:
                    replaced = self._stored_term_ids(conn, [i for i in latest if i in index])
                new_terms: list[tuple[str, int]] = []
                rows = []
                term_rows = []
                docs = []
                for chunk, metadata, counts in prepared:
                    term_ids, freqs = self._vocab.assign(counts, new_terms)
                    docs.append((term_ids, freqs))
                    rows.append((chunk.id, chunk.source_id, chunk.text, metadata))
                    term_rows.append(
                        (chunk.id, chunk.source_id, schema.blob(term_ids), schema.blob(freqs))
                    )
                conn.executemany("INSERT INTO terms(term, id) VALUES (?, ?)", new_terms)
                conn.executemany(
                    "INSERT OR REPLACE INTO chunks(id, source_id, text, metadata) "
                    "VALUES (?, ?, ?, ?)",
                    rows,
                )
                conn.executemany(
                    "INSERT OR REPLACE INTO chunk_terms(id, source_id, term_ids, term_freqs) "
                    "VALUES (?, ?, ?, ?)",
                    term_rows,
                )
                conn.execute(schema.BUMP)
            if index is not None:
                ids = [c.id for c, _, _ in prepared]
                sources = [c.source_id for c, _, _ in prepared]
                self._update_index(version, replaced, (ids, sources, DocTerms.of(docs)))
        logger.debug("added %d chunks to %s", len(rows), self.path)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove the chunks with these ids."""
        unique = list(dict.fromkeys(ids))
        if not unique:
            return
        with self._lock:
            conn = self._db()
            with self._writing(conn):
                version = schema.version_of(conn)
                index = self._live_index(version)
                gone: dict[str, np.ndarray] | None = {}
                if index is not None:
                    gone = self._stored_term_ids(conn, [i for i in unique if i in index])
                removed = 0
                for first in range(0, len(unique), schema.BATCH):
                    part = unique[first : first + schema.BATCH]
                    marks = ",".join("?" * len(part))
                    conn.execute(f"DELETE FROM chunk_terms WHERE id IN ({marks})", part)
                    sql = f"DELETE FROM chunks WHERE id IN ({marks})"
                    removed += conn.execute(sql, part).rowcount
                if removed:  # nothing removed: the index stays valid
                    conn.execute(schema.BUMP)
            if index is not None and removed:
                self._update_index(version, gone)

    def delete_source(self, source_id: str) -> None:
        """Remove every chunk of ``source_id``."""
        with self._lock:
            conn = self._db()
            with self._writing(conn):
                version = schema.version_of(conn)
                index = self._live_index(version)
                gone: dict[str, np.ndarray] | None = {}
                # Through chunks' index on source_id (chunk_terms has none: not worth it).
                of_source = "id IN (SELECT id FROM chunks WHERE source_id = ?)"
                if index is not None:
                    rows = conn.execute(
                        f"SELECT id, term_ids FROM chunk_terms WHERE {of_source}", (source_id,)
                    )
                    gone = schema.decoded(rows)
                conn.execute(f"DELETE FROM chunk_terms WHERE {of_source}", (source_id,))
                removed = conn.execute(
                    "DELETE FROM chunks WHERE source_id = ?", (source_id,)
                ).rowcount
                if removed:
                    conn.execute(schema.BUMP)
                if gone is not None and len(gone) != removed:  # see _stored_term_ids
                    gone = None
            if index is not None and removed:
                self._update_index(version, gone)

    def _stored_term_ids(
        self, conn: sqlite3.Connection, ids: Sequence[str]
    ) -> dict[str, np.ndarray] | None:
        """The stored term ids of these chunks, which the index needs to forget them; None
        if one has none (written by an older Ragloom: the index is then reloaded)."""
        found: dict[str, np.ndarray] = {}
        for first in range(0, len(ids), schema.BATCH):
            part = ids[first : first + schema.BATCH]
            marks = ",".join("?" * len(part))
            sql = f"SELECT id, term_ids FROM chunk_terms WHERE id IN ({marks})"
            found.update(schema.decoded(conn.execute(sql, part)))
        return found if len(found) == len(ids) else None

    def _update_index(
        self,
        version: Version,
        removed: Mapping[str, np.ndarray] | None,
        added: tuple[list[str], list[str], DocTerms] | None = None,
    ) -> None:
        """Apply a write just committed over ``version`` to the index, in place."""
        index = self._index
        if index is None or removed is None:  # a row without term ids: reload instead
            self._index = self._index_version = None
            return
        try:
            index.remove(removed)
            if added is not None:
                index.add(*added)
        except Exception:
            # The database is right and committed; only the copy in memory is not.
            logger.exception("could not update the BM25 index of %s; reloading it", self.path)
            self._index = self._index_version = None
            return
        self._index_version = (version[0], version[1] + 1)

    # -- reading --------------------------------------------------------------------------

    def ids(self) -> set[str]:
        """Every chunk id."""
        with self._lock:
            return {row[0] for row in self._db().execute("SELECT id FROM chunks")}

    def count(self) -> int:
        """The number of chunks."""
        with self._lock:
            return int(self._db().execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def drop(self) -> None:
        """Delete the database (and index folders of older versions; the folder too, if
        left empty)."""
        with self._lock:
            self.close()
            self._forget()
            if not self.path.exists():
                return
            for name in (
                schema.DB_NAME,
                f"{schema.DB_NAME}-journal",
                f"{schema.DB_NAME}-wal",
                f"{schema.DB_NAME}-shm",
            ):
                (self.path / name).unlink(missing_ok=True)
            for child in self.path.glob(f"*{schema.OLD_INDEX_PREFIX}*"):  # with temporary folders
                shutil.rmtree(child, ignore_errors=True)
            # The folder may hold files that are not ours: then it stays.
            with contextlib.suppress(OSError):
                self.path.rmdir()
        logger.info("dropped BM25 store %s", self.path)

    # -- index ----------------------------------------------------------------------------

    def ensure_index(self) -> None:
        """Load the index now (if not loaded, or changed by another process) instead of on
        the next query: 0.5 to 0.9 s at 100k chunks (reading the stored term ids, no
        tokenizing). After this store's own writes it costs nothing."""
        with self._lock:
            self._current_index()

    def _current_index(self) -> SegmentedBM25:
        conn = self._db()
        version = schema.version_of(conn)
        if self._index is None or self._index_version != version:
            self._load(conn)
        assert self._index is not None
        return self._index

    def _load(self, conn: sqlite3.Connection, repair: bool = True) -> None:
        """Build the index from the stored term ids, in one read transaction (a snapshot)."""
        started = time.perf_counter()
        ids: list[str] = []
        sources: list[str] = []
        counts: list[int] = []
        term_bytes = bytearray()
        freq_bytes = bytearray()
        with schema.transaction(conn, write=False):
            version = schema.version_of(conn)
            chunks, with_terms = conn.execute(
                "SELECT (SELECT COUNT(*) FROM chunks), (SELECT COUNT(*) FROM chunk_terms)"
            ).fetchone()
            if chunks == with_terms:
                self._sync_vocab(conn, version[0])
                for chunk_id, source_id, term_blob, freq_blob in conn.execute(
                    "SELECT id, source_id, term_ids, term_freqs FROM chunk_terms"
                ):
                    ids.append(chunk_id)
                    sources.append(source_id)
                    counts.append(len(term_blob))
                    term_bytes += term_blob
                    freq_bytes += freq_blob
        if chunks != with_terms:
            # Only an older Ragloom writing to this file since it was upgraded does this.
            if not repair:
                raise RuntimeError(f"{self.path}: chunks and their terms still differ")
            with self._writing(conn):
                repair_terms(conn, self._vocab, self.path)
            self._load(conn, repair=False)
            return
        terms = DocTerms(
            counts=np.asarray(counts, dtype=np.int64) // schema.INT32.itemsize,
            term_ids=np.frombuffer(term_bytes, dtype=schema.INT32),
            freqs=np.frombuffer(freq_bytes, dtype=schema.INT32),
        )
        index = SegmentedBM25()
        index.add(ids, sources, terms)
        self._index, self._index_version = index, version
        logger.info(
            "loaded the BM25 index of %d chunks from %s in %.2f s",
            len(ids),
            self.path,
            time.perf_counter() - started,
        )

    # -- search ---------------------------------------------------------------------------

    def query(
        self, text: str, k: int, source_ids: Collection[str] | None = None
    ) -> list[tuple[Chunk, float]]:
        """The ``k`` chunks with the highest BM25 score for ``text`` (ties: smaller id first)."""
        if k <= 0 or (source_ids is not None and not source_ids):
            return []
        terms = query_terms(text)
        if not terms:
            return []
        with self._lock:
            index = self._current_index()
            term_ids = self._vocab.known(terms)
            # Scoring only the allowed chunks (the rest get weight 0) is exact, where
            # over-fetching then filtering could miss them.
            hits = index.search(term_ids, k, source_ids)
            chunks = self._fetch([chunk_id for chunk_id, _ in hits])
        # A chunk deleted by another process since the index was loaded is skipped.
        return [(chunks[cid], score) for cid, score in hits if cid in chunks]

    def find_terms(
        self, terms: Sequence[str], source_ids: Collection[str] | None = None
    ) -> dict[str, bool | None]:
        """Whether each term occurs in a chunk (of ``source_ids``): from the vocabulary and
        posting lists, reading chunk texts only to place a phrase's words in order
        (:func:`~ragloom.stores.bm25.terms.find_terms`)."""
        if source_ids is not None and not source_ids:
            return dict.fromkeys(terms, False)
        with self._lock:
            index = self._current_index()

            def texts_of(ids: list[str]) -> list[str]:
                return [chunk.text for chunk in self._fetch(ids).values()]

            return find_terms(index, self._vocab, texts_of, terms, source_ids)

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        """The stored chunks with these ids, by id (:class:`~ragloom.stores.base.ChunkLookup`)."""
        with self._lock:
            return self._fetch(list(dict.fromkeys(ids)))

    def _fetch(self, ids: list[str]) -> dict[str, Chunk]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        sql = f"SELECT id, text, metadata FROM chunks WHERE id IN ({marks})"
        rows: list[tuple[str, str, str]] = self._db().execute(sql, ids).fetchall()
        found: dict[str, Chunk] = {}
        for chunk_id, text, metadata in rows:
            meta: dict[str, Any] = json.loads(metadata)
            found[chunk_id] = Chunk.from_metadata(chunk_id, text, meta)
        return found
