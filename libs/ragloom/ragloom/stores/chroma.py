"""A :class:`~ragloom.stores.base.VectorStore` over one Chroma collection.

Chroma runs embedded (``PersistentClient`` on a folder) or as a server (``HttpClient``);
this store takes either. Embeddings are always passed explicitly: given documents or query
texts alone, Chroma would embed them with its own ONNX model, which it downloads on first
use — impossible offline and not the model Ragloom indexed with. For the same reason the
collection is opened with ``embedding_function=None``.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import chromadb
import httpx
import numpy as np
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection as ChromaCollection
from chromadb.api.types import GetResult
from chromadb.config import Settings
from chromadb.errors import InternalError, NotFoundError

from ragloom.schema import Chunk
from ragloom.stores.base import ChunkLookup, StoreUnavailableError, VectorStore

__all__ = ["ROWS_PER_WRITE", "ChromaVectorStore", "chroma_client", "chroma_http_client"]

logger = logging.getLogger(__name__)

ROWS_PER_WRITE = 128
"""Rows written or deleted per call into Chroma. Its Rust core keeps the GIL for the whole
of a call: one upsert of 2,941 chunks paused every other thread of the app (the UI, other
questions) for 2.2 s; in calls of 128 rows the longest pause was 0.23 s, at the same speed
(64 rows: 0.12 s but a quarter slower)."""

_T = TypeVar("_T")

# Chroma's rule for collection names, checked up front so a bad name fails when the store
# is configured rather than on its first use.
_NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{1,510})[A-Za-z0-9]$")

_clients: dict[str, ClientAPI] = {}
_clients_lock = threading.Lock()
_reopened: dict[str, int] = {}  # embedded folder -> times its client was thrown away


def _settings() -> Settings:
    return Settings(anonymized_telemetry=False)


def chroma_client(path: str | Path) -> ClientAPI:
    """The process-wide embedded Chroma client for ``path`` (created on first call).

    Chroma shares one system per folder and refuses a second client on the same folder
    with different settings, so every store on a folder goes through this cache.
    """
    key = str(Path(path).expanduser().resolve())
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            Path(key).mkdir(parents=True, exist_ok=True)
            client = chromadb.PersistentClient(path=key, settings=_settings())
            _clients[key] = client
            logger.info("opened Chroma at %s", key)
        return client


def reopen_chroma(path: str | Path) -> None:
    """Throw away the embedded Chroma of ``path``; the next use opens it afresh.

    After a write fails inside Chroma (``InternalError``: a full disk, seen as "database or
    disk is full" or "Error in compaction"), the embedded system of that folder may hang
    on its next write or read, even once space is freed; a new system on the same folder
    reads and writes again (measured on chromadb 1.5.9). Chroma keeps its systems in one
    process-wide cache, so every embedded folder of the process is reopened.
    """
    from chromadb.api.client import SharedSystemClient

    key = str(Path(path).expanduser().resolve())
    with _clients_lock:
        _clients.clear()
        SharedSystemClient.clear_system_cache()
        _reopened[key] = _reopened.get(key, 0) + 1
    logger.warning("Chroma at %s failed inside; it is opened afresh at its next use", key)


def chroma_http_client(host: str, port: int, ssl: bool = False) -> ClientAPI:
    """A client of a Chroma server (``chroma run --path DIR --host H --port P``), telemetry
    off; one per address for the process."""
    key = f"{'https' if ssl else 'http'}://{host}:{port}"
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            with _server_reached():
                client = chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=_settings())
            _clients[key] = client
            logger.info("using the Chroma server at %s", key)
        return client


def _batches(n: int, size: int) -> Iterator[slice]:
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


# A Chroma server away (down, restarting, the network): httpx's errors under
# ``chromadb.HttpClient``. Configuration errors (a wrong scheme, TLS) are not among them:
# they would not go away by waiting.
_AWAY = (httpx.NetworkError, httpx.TimeoutException, httpx.RemoteProtocolError)


# What a reverse proxy (or a load balancer) before the server answers while no server is
# behind it; chromadb raises a bare Exception of the body (an HTML page) for it.
_GATEWAY_AWAY = frozenset({502, 503, 504})


def _away_words(exc: BaseException | None) -> str | None:
    """Why the server is away, if ``exc`` says it is; ``None`` for any other error."""
    if isinstance(exc, httpx.TimeoutException):
        return "it did not answer in time"
    if isinstance(exc, httpx.ConnectError):
        return "the connection was refused or failed"
    if isinstance(exc, _AWAY):
        return "the connection broke off"
    if isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code in _GATEWAY_AWAY:
        return f"what stands before it answered {exc.response.status_code}"
    return None


@contextlib.contextmanager
def _server_reached() -> Iterator[None]:
    """Turn a Chroma server's being away into :class:`StoreUnavailableError`, in fixed
    words (the server's own may name hosts; they stay in the chained exception)."""
    try:
        yield
    except Exception as exc:
        # chromadb wraps what httpx raised, up to twice: a bare Exception of the body for
        # an HTTP error that is not its own, in a ValueError when the client is made.
        cause: BaseException | None = exc
        for _ in range(4):
            words = _away_words(cause)
            if words is not None:
                raise StoreUnavailableError(
                    f"the Chroma server could not be reached ({words})"
                ) from exc
            cause = None if cause is None else cause.__cause__ or cause.__context__
        raise


class ChromaVectorStore(VectorStore):
    """Chunks in the Chroma collection ``collection_name``, compared by cosine similarity.

    Give either ``path`` (an embedded database folder, opened through
    :func:`chroma_client`) or ``client`` (any Chroma client, e.g. an ``HttpClient``). The
    collection is opened on first use, so constructing a store touches nothing.

    With ``texts_from`` (a store holding the same chunks with their texts, as the full-text
    store of an index does), Chroma keeps vectors and metadata only, and a hit's text is
    read from that store; a hit it does not hold (not written there yet, or removed) is
    left out. Chroma indexes every text it is given for its own full-text search, which
    Ragloom does not use: that took four fifths of its insert time (1.8 ms a chunk
    against 0.34 without texts, embedded, on this project's machine).
    """

    def __init__(
        self,
        collection_name: str,
        *,
        path: str | Path | None = None,
        client: ClientAPI | None = None,
        texts_from: ChunkLookup | None = None,
    ) -> None:
        if (path is None) == (client is None):
            raise ValueError("give exactly one of path and client")
        if not _NAME_RE.match(collection_name) or ".." in collection_name:
            raise ValueError(
                f"invalid Chroma collection name {collection_name!r}: 3-512 characters of "
                "[A-Za-z0-9._-], starting and ending with a letter or digit"
            )
        self.collection_name = collection_name
        self._path = Path(path) if path is not None else None
        self._client = client
        self._collection: ChromaCollection | None = None
        self._max_batch: int | None = None
        # Reentrant: ``client`` takes it to drop a stale collection, and is used under it.
        self._lock = threading.RLock()
        self._opened_as = 0  # the folder's reopen count this store's client was made at
        self._texts_from = texts_from

    def __repr__(self) -> str:
        where = self._path if self._path is not None else type(self._client).__name__
        return f"ChromaVectorStore({self.collection_name!r}, {where})"

    @property
    def client(self) -> ClientAPI:
        """The Chroma client this store uses."""
        if self._path is not None:
            key = str(self._path.expanduser().resolve())
            if self._client is None or self._opened_as != _reopened.get(key, 0):
                with self._lock:
                    self._collection = None
                self._opened_as = _reopened.get(key, 0)
                self._client = chroma_client(self._path)
        assert self._client is not None
        return self._client

    def _get_collection(self) -> ChromaCollection:
        with self._lock:
            if self._collection is None or self._client is not self.client:
                self._collection = self.client.get_or_create_collection(
                    self.collection_name,
                    configuration={"hnsw": {"space": "cosine"}},
                    embedding_function=None,
                )
            return self._collection

    def _call(self, op: Callable[[ChromaCollection], _T]) -> _T:
        """Run ``op`` on the collection, reopening it once if it was dropped meanwhile.

        Another store object (or process) on the same collection may have called
        :meth:`drop`, which leaves this object's handle pointing at a deleted collection.
        A Chroma server that cannot be reached raises :class:`StoreUnavailableError`.
        """
        with _server_reached():
            try:
                return op(self._get_collection())
            except InternalError:
                if self._path is not None:  # embedded: see reopen_chroma
                    reopen_chroma(self._path)
                raise
            except NotFoundError:
                logger.info("Chroma collection %s was deleted; recreating", self.collection_name)
                with self._lock:
                    self._collection = None
                return op(self._get_collection())

    def _batch_size(self) -> int:
        # One round trip for an HttpClient, so ask once.
        if self._max_batch is None:
            with _server_reached():
                self._max_batch = max(1, int(self.client.get_max_batch_size()))
        return min(self._max_batch, ROWS_PER_WRITE)

    def add(self, chunks: Sequence[Chunk], embeddings: np.ndarray) -> None:
        """Insert or replace ``chunks`` with their ``embeddings`` (one row per chunk)."""
        vectors = np.asarray(embeddings, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
            raise ValueError(
                f"need a ({len(chunks)}, dim) embedding matrix, got shape {vectors.shape}"
            )
        if not chunks:
            return
        # Chroma rejects a batch that repeats an id; the last occurrence wins, as in a
        # sequence of single upserts.
        last = {chunk.id: i for i, chunk in enumerate(chunks)}
        rows = sorted(last.values())
        size = self._batch_size()
        for part in _batches(len(rows), size):
            picked = rows[part]
            batch = [chunks[i] for i in picked]
            keep_texts = self._texts_from is None
            self._call(
                partial(_upsert, chunks=batch, vectors=vectors[picked], keep_texts=keep_texts)
            )
        logger.debug("upserted %d chunks into %s", len(rows), self.collection_name)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove the chunks with these ids."""
        unique = list(dict.fromkeys(ids))
        size = self._batch_size()
        for part in _batches(len(unique), size):
            batch = unique[part]
            self._call(partial(_delete, ids=batch))

    def delete_source(self, source_id: str) -> None:
        """Remove every chunk of ``source_id``."""
        # By ids, in calls of ROWS_PER_WRITE: one delete by a filter held the GIL for 1 s
        # on 2,941 chunks. Listing the ids takes a few milliseconds per thousand.
        found = self._call(lambda col: col.get(where={"source_id": source_id}, include=[]))
        self.delete(found["ids"])

    def query(
        self, embedding: np.ndarray, k: int, source_ids: Collection[str] | None = None
    ) -> list[tuple[Chunk, float]]:
        """The ``k`` nearest chunks with their cosine similarity (1 - Chroma's distance)."""
        if k <= 0 or (source_ids is not None and not source_ids):
            return []
        vector = np.asarray(embedding, dtype=np.float32).reshape(1, -1)
        include = ["metadatas", "distances"]
        if self._texts_from is None:
            include.append("documents")
        kwargs: dict[str, Any] = {"query_embeddings": vector, "n_results": k, "include": include}
        if source_ids is not None:
            # $in needs a non-empty list of one type; sorted for a stable request.
            kwargs["where"] = {"source_id": {"$in": sorted(set(source_ids))}}
        result = self._call(lambda col: col.query(**kwargs))
        ids = result["ids"][0]
        metadatas = (result.get("metadatas") or [[]])[0]
        distances = (result.get("distances") or [[]])[0]
        texts: list[str | None]
        if self._texts_from is None:
            texts = [text or "" for text in (result.get("documents") or [[]])[0]]
        else:
            stored = self._texts_from.chunks(ids)
            texts = [stored[i].text if i in stored else None for i in ids]
        hits: list[tuple[Chunk, float]] = []
        for chunk_id, text, meta, distance in zip(ids, texts, metadatas, distances, strict=True):
            if text is None:
                logger.debug("%s: no text for the hit %s; left out", self, chunk_id)
                continue
            chunk = Chunk.from_metadata(chunk_id, text, dict(meta or {}))
            hits.append((chunk, 1.0 - float(distance)))
        return hits

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored embeddings of ``ids`` (float32, as added), by id; unknown ids left out.

        One ``get`` by id (no ``where`` filter) costs about a millisecond for a few dozen
        chunks, far less than embedding their texts again.
        """
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        found: dict[str, np.ndarray] = {}
        size = self._batch_size()
        for part in _batches(len(wanted), size):
            batch = wanted[part]
            result = self._call(partial(_get_embeddings, ids=batch))
            embeddings = result.get("embeddings")
            if embeddings is None:
                continue
            for chunk_id, vector in zip(result["ids"], embeddings, strict=True):
                found[chunk_id] = np.asarray(vector, dtype=np.float32)
        return found

    def ids(self) -> set[str]:
        """Every chunk id, read page by page so a large collection is not one request."""
        size = self._batch_size()
        found: set[str] = set()
        offset = 0
        while True:
            page = self._call(partial(_get_ids, limit=size, offset=offset))
            found.update(page["ids"])
            if len(page["ids"]) < size:
                return found
            offset += size

    def count(self) -> int:
        """The number of chunks in the collection."""
        return self._call(lambda col: col.count())

    def drop(self) -> None:
        """Delete the collection; the next call creates it again, empty."""
        with self._lock:
            self._collection = None
            # Already gone (dropped by another store object): dropping is idempotent.
            with _server_reached(), contextlib.suppress(NotFoundError):
                self.client.delete_collection(self.collection_name)
        logger.info("dropped Chroma collection %s", self.collection_name)


# What the store asks of a collection inside a loop, as functions of the collection, so that
# :meth:`ChromaVectorStore._call` can run one again on a reopened collection (partial binds
# each batch; a lambda in the loop would see the loop's last values).
def _upsert(
    col: ChromaCollection, chunks: Sequence[Chunk], vectors: np.ndarray, keep_texts: bool
) -> None:
    col.upsert(
        ids=[c.id for c in chunks],
        embeddings=vectors,
        documents=[c.text for c in chunks] if keep_texts else None,
        metadatas=[c.metadata() for c in chunks],
    )


def _delete(col: ChromaCollection, ids: list[str]) -> None:
    col.delete(ids=ids)


def _get_embeddings(col: ChromaCollection, ids: list[str]) -> GetResult:
    return col.get(ids=ids, include=["embeddings"])


def _get_ids(col: ChromaCollection, limit: int, offset: int) -> GetResult:
    return col.get(include=[], limit=limit, offset=offset)
