"""A :class:`~ragloom.stores.base.FullTextStore` scored by BM25 (``bm25s``), kept in a folder.

- ``chunks.sqlite3``: the source of truth, table ``chunks(id, source_id, text, metadata)``
  and a ``generation`` counter bumped in the same transaction as every change (SQLite
  makes each add/delete atomic: a crash never leaves half a batch).
- ``index-<store>-<generation>/``: the bm25s index of that generation (``store`` is random
  per database file) and a ``manifest.json`` mapping its rows to chunk ids; written to a
  temporary folder and renamed into place, so it is complete or absent.

bm25s cannot update an index in place, so a change only bumps the generation. The next
query that finds its index older than the database loads the current generation's saved
index (another process may have built it) or rebuilds it: a batch of adds costs one
rebuild, and a restart one load (~5 ms), not a rebuild.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import sqlite3
import threading
import unicodedata
import uuid
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from bm25s import BM25

from ragloom.schema import Chunk
from ragloom.stores.base import FullTextStore

__all__ = ["TOKENIZER_VERSION", "BM25Store", "tokenize"]

logger = logging.getLogger(__name__)

#: Saved indexes record it; change it whenever :func:`tokenize` changes, so they rebuild.
TOKENIZER_VERSION = 1

# Scripts written without spaces between words: Han, Hiragana, Katakana (with its
# extensions and halfwidth forms), Hangul, and the ideographic marks 々 and 〇.
_CJK = (
    "\u1100-\u11ff\u3005\u3007\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0003134f"
)
_HAS_CJK = re.compile(f"[{_CJK}]")
_WORD = re.compile(f"[^\\W{_CJK}]+")
_WORD_OR_CJK_RUN = re.compile(f"([{_CJK}]+)|[^\\W{_CJK}]+")
# bm25s's copy of Lucene's English list (33 words). These occur in nearly every chunk, so
# they add almost nothing to a score but make every query touch every chunk, and a
# question ("what is the ... of the ...") is full of them. The list is kept small on
# purpose: longer lists (NLTK's) drop words such as "how", "most" or "after" that matter.
_STOPWORDS = frozenset(bm25s.stopwords.STOPWORDS_EN)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into BM25 terms.

    NFKC-normalised (full-width Latin becomes ASCII) and case-folded; words are runs of
    Unicode word characters minus English stopwords. CJK runs have no spaces to split on,
    so they become overlapping character bigrams ("加速器" -> "加速", "速器"), a lone CJK
    character a unigram: the usual choice of Lucene's CJK analyser, needing no dictionary.
    """
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    text = text.casefold()
    if _HAS_CJK.search(text) is None:  # fast path: one regex pass
        return [w for w in _WORD.findall(text) if w not in _STOPWORDS]
    terms: list[str] = []
    for match in _WORD_OR_CJK_RUN.finditer(text):
        run = match.group(1)
        if run is None:
            if match.group(0) not in _STOPWORDS:
                terms.append(match.group(0))
        elif len(run) == 1:
            terms.append(run)
        else:
            terms.extend(run[i : i + 2] for i in range(len(run) - 1))
    return terms


_DB_NAME = "chunks.sqlite3"
_INDEX_PREFIX = "index-"
_MANIFEST = "manifest.json"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY,
    source_id TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_source_id ON chunks(source_id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES ('generation', 0);
INSERT OR IGNORE INTO meta(key, value) VALUES ('store', random() & 9223372036854775807);
"""
_BUMP = "UPDATE meta SET value = value + 1 WHERE key = 'generation'"


class BM25Store(FullTextStore):
    """Chunks in a SQLite file under ``path``, searched with a bm25s index saved beside it.

    Safe to share between threads (one lock around everything; a query over 10k chunks
    takes well under 1 ms once the index is built). Nothing is created on disk until the
    store is first used.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._reset_index()

    def __repr__(self) -> str:
        return f"BM25Store({str(self.path)!r})"

    def _reset_index(self) -> None:
        self._index: BM25 | None = None
        self._index_version: tuple[int, int] | None = None  # None: nothing loaded yet
        self._ids: list[str] = []
        self._by_source: dict[str, np.ndarray] = {}

    # -- database -------------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.mkdir(parents=True, exist_ok=True)
            # One connection shared by all threads, serialised by self._lock.
            conn = sqlite3.connect(self.path / _DB_NAME, check_same_thread=False)
            with conn:
                conn.executescript(_SCHEMA)
            self._conn = conn
        return self._conn

    def _version(self) -> tuple[int, int]:
        """(store, generation): random per database file, and bumped by every change.

        The store key keeps an index saved for a since-deleted database from matching.
        """
        meta = dict(self._db().execute("SELECT key, value FROM meta"))
        return int(meta["store"]), int(meta["generation"])

    def close(self) -> None:
        """Close the database file; the store reopens it when used again."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def add(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace ``chunks`` (the last of repeated ids wins); indexed lazily."""
        if not chunks:
            return
        rows = [(c.id, c.source_id, c.text, json.dumps(c.metadata())) for c in chunks]
        with self._lock:
            conn = self._db()
            with conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO chunks(id, source_id, text, metadata) "
                    "VALUES (?, ?, ?, ?)",
                    rows,
                )
                conn.execute(_BUMP)
        logger.debug("added %d chunks to %s", len(rows), self.path)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove the chunks with these ids."""
        params = [(i,) for i in dict.fromkeys(ids)]
        if not params:
            return
        with self._lock:
            conn = self._db()
            with conn:
                removed = conn.executemany("DELETE FROM chunks WHERE id = ?", params).rowcount
                if removed:  # nothing removed: keep the index valid
                    conn.execute(_BUMP)

    def delete_source(self, source_id: str) -> None:
        """Remove every chunk of ``source_id``."""
        with self._lock:
            conn = self._db()
            with conn:
                removed = conn.execute(
                    "DELETE FROM chunks WHERE source_id = ?", (source_id,)
                ).rowcount
                if removed:
                    conn.execute(_BUMP)

    def ids(self) -> set[str]:
        """Every chunk id."""
        with self._lock:
            return {row[0] for row in self._db().execute("SELECT id FROM chunks")}

    def count(self) -> int:
        """The number of chunks."""
        with self._lock:
            return int(self._db().execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def drop(self) -> None:
        """Delete the database and every saved index (the folder too, if left empty)."""
        with self._lock:
            self.close()
            self._reset_index()
            if not self.path.exists():
                return
            for name in (_DB_NAME, f"{_DB_NAME}-journal", f"{_DB_NAME}-wal", f"{_DB_NAME}-shm"):
                (self.path / name).unlink(missing_ok=True)
            for child in self.path.glob(f"*{_INDEX_PREFIX}*"):  # with temporary folders
                shutil.rmtree(child, ignore_errors=True)
            # The folder may hold files that are not ours: then it stays.
            with contextlib.suppress(OSError):
                self.path.rmdir()
        logger.info("dropped BM25 store %s", self.path)

    # -- index ----------------------------------------------------------------------------

    def ensure_index(self) -> None:
        """Bring the index up to date now (load or rebuild) instead of on the next query.

        Worth calling at the end of an ingestion so the first question does not pay for
        the rebuild (about 2 s per 10k chunks).
        """
        with self._lock:
            version = self._version()
            if self._index_version != version:
                folder = self.path / f"{_INDEX_PREFIX}{version[0]}-{version[1]}"
                if not self._load(folder, version):
                    self._rebuild(folder, version)

    def _set_index(
        self, index: BM25 | None, ids: list[str], sources: list[str], version: tuple[int, int]
    ) -> None:
        by_source: dict[str, list[int]] = {}
        for position, source_id in enumerate(sources):
            by_source.setdefault(source_id, []).append(position)
        self._index = index
        self._ids = ids
        self._by_source = {s: np.asarray(p, dtype=np.int64) for s, p in by_source.items()}
        self._index_version = version

    def _load(self, folder: Path, version: tuple[int, int]) -> bool:
        try:
            manifest = json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))
            if manifest.get("version") != [*version, TOKENIZER_VERSION]:
                return False
            ids: list[str] = manifest["ids"]
            index = BM25.load(folder, show_progress=False) if ids else None
        except (OSError, ValueError, KeyError) as exc:
            # Absent, or removed by another process mid-load: rebuilding is always correct.
            logger.debug("no usable BM25 index at %s: %s", folder, exc)
            return False
        if index is not None and index.scores["num_docs"] != len(ids):
            return False
        self._set_index(index, ids, manifest["source_ids"], version)
        logger.info("loaded BM25 index of %d chunks from %s", len(ids), folder)
        return True

    def _rebuild(self, folder: Path, version: tuple[int, int]) -> None:
        ids: list[str] = []
        sources: list[str] = []
        vocab: dict[str, int] = {}
        corpus: list[list[int]] = []
        # Iterate the cursor rather than fetchall(): only one text is held at a time.
        for chunk_id, source_id, text in self._db().execute(
            "SELECT id, source_id, text FROM chunks ORDER BY id"
        ):
            ids.append(chunk_id)
            sources.append(source_id)
            corpus.append([vocab.setdefault(t, len(vocab)) for t in tokenize(text)])
        index: BM25 | None = None
        _undo_bm25s_debug_level()
        if vocab:  # bm25s cannot index a corpus without a single token
            index = BM25()
            index.index((corpus, vocab), show_progress=False)
        self._set_index(index, ids, sources, version)
        logger.info("rebuilt BM25 index of %d chunks in %s", len(ids), self.path)
        self._save(folder, version, sources)

    def _save(self, final: Path, version: tuple[int, int], sources: list[str]) -> None:
        tmp = final.with_name(f".{final.name}.tmp-{uuid.uuid4().hex}")
        manifest = {
            "version": [*version, TOKENIZER_VERSION],
            "ids": self._ids,
            "source_ids": sources,
        }
        try:
            if self._index is not None:
                self._index.save(tmp, show_progress=False)
            tmp.mkdir(exist_ok=True)
            (tmp / _MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
            try:
                os.rename(tmp, final)
            except OSError:
                # Another process saved this generation first; its copy is as good.
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError as exc:
            # The in-memory index is valid; the next start will simply rebuild.
            logger.warning("could not save the BM25 index to %s: %s", final, exc)
            shutil.rmtree(tmp, ignore_errors=True)
            return
        # Older generations are useless now, and so are temporary folders left by a crash
        # while saving one (a process still saving an old generation just fails to rename).
        for old in self.path.glob(f"*{_INDEX_PREFIX}*"):
            store, _, gen = old.name.lstrip(".").removeprefix(_INDEX_PREFIX).partition("-")
            gen = gen.split(".")[0]
            if old != final and (
                store != str(version[0]) or (gen.isdigit() and int(gen) < version[1])
            ):
                shutil.rmtree(old, ignore_errors=True)

    # -- search ---------------------------------------------------------------------------

    def query(
        self, text: str, k: int, source_ids: Collection[str] | None = None
    ) -> list[tuple[Chunk, float]]:
        """The ``k`` chunks with the highest BM25 score for ``text`` (ties: smaller id first)."""
        if k <= 0 or (source_ids is not None and not source_ids):
            return []
        # A term repeated in the question counts once: its weight comes from the documents.
        terms = list(dict.fromkeys(tokenize(text)))
        if not terms:
            return []
        with self._lock:
            self.ensure_index()
            index = self._index
            if index is None:
                return []
            term_ids = index.get_tokens_ids(terms)
            if not term_ids:
                return []
            mask = None
            if source_ids is not None:
                allowed = [self._by_source[s] for s in source_ids if s in self._by_source]
                if not allowed:
                    return []
                # Scoring only the allowed chunks (the rest get weight 0) is exact, where
                # over-fetching then filtering could miss them.
                mask = np.zeros(len(self._ids), dtype=np.float32)
                mask[np.concatenate(allowed)] = 1.0
            scores = index.get_scores_from_ids(term_ids, weight_mask=mask)
            top = _top_k(scores, k)
            hits = [(self._ids[i], float(scores[i])) for i in top]
            chunks = self._fetch([chunk_id for chunk_id, _ in hits])
        # A chunk deleted by another process since the index was built is skipped.
        return [(chunks[cid], score) for cid, score in hits if cid in chunks]

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


_bm25s_logger_checked = False


def _undo_bm25s_debug_level() -> None:
    """Undo bm25s setting its logger to DEBUG at import (its debug lines would reach any
    root handler whatever the root level); once, so a level the application sets is kept.
    """
    global _bm25s_logger_checked
    if not _bm25s_logger_checked:
        _bm25s_logger_checked = True
        bm25s_logger = logging.getLogger("bm25s")
        if bm25s_logger.level == logging.DEBUG:
            bm25s_logger.setLevel(logging.NOTSET)


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` highest positive scores, best first, ties by position.

    Rows are ordered by chunk id, so ties fall to the smaller id: the same query always
    returns the same list. Only positive scores count: BM25 (Lucene IDF) gives every
    chunk sharing a term a positive score and every other chunk 0.
    """
    candidates = np.flatnonzero(scores > 0)
    if candidates.size > k:
        values = scores[candidates]
        kth = np.partition(values, values.size - k)[values.size - k]
        # Keep every candidate tied with the k-th so the cut below is by position.
        candidates = candidates[values >= kth]
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order][:k]
