"""Vectors of texts embedded before, kept by an embedding model: :func:`embed_cached`.

The sentence focus embeds every sentence of the passages a question retrieves, and the
passages of a team's documents come back again and again, question after question: under
load that embedding is most of an answer's work (71 of 93 ms a FullQA answer on the
speech, benchmarks/load.py). A model's vector of a text never changes, so each model
keeps the last :data:`MAX_CACHED_TEXTS` it made, and only texts it has not seen are
embedded, in one batch.

Answers that arrive together retrieve the same passages before any of them has cached
their sentences. So a text that one call is embedding is not embedded again by another:
the second waits for the first's vector (and, should that embedding fail, gets the same
error), and embeds only what nobody else is embedding.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Protocol

import numpy as np

from ragloom.embeddings.base import Embeddings, EmbeddingsError

__all__ = ["MAX_CACHED_QUERIES", "MAX_CACHED_TEXTS", "embed_cached", "embed_query_cached"]

MAX_CACHED_TEXTS = 20_000
"""Vectors a model keeps (30 MB of 384-dimensional float32s); the least recent go first."""
MAX_CACHED_QUERIES = 1_000
"""Query vectors a model keeps: a question is embedded for the search, then for the focus."""
MAX_CACHED_CHARS = 4_000
"""Longer texts are embedded every time: a sentence is short, a whole passage is not it."""

_LOCK = threading.Lock()


class _Cache:
    def __init__(self) -> None:
        self.vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self.lock = threading.Lock()
        # Texts some call is embedding now, and the vector it will have: guarded by lock.
        self.pending: dict[str, Future[np.ndarray]] = {}


def _cache_of(embeddings: object, name: str = "_ragloom_text_cache") -> _Cache:
    with _LOCK:
        cache: _Cache | None = getattr(embeddings, name, None)
        if cache is None:
            cache = _Cache()
            setattr(embeddings, name, cache)
        return cache


def embed_cached(embeddings: Embeddings, texts: Sequence[str]) -> np.ndarray:
    """``embeddings.embed_documents(texts)``, embedding only the texts it has not kept and
    no other call is embedding now."""
    if not texts:
        return embeddings.embed_documents([])
    cache = _cache_of(embeddings)
    known: dict[str, np.ndarray] = {}
    awaited: dict[str, Future[np.ndarray]] = {}
    claimed: dict[str, Future[np.ndarray]] = {}
    with cache.lock:
        for text in dict.fromkeys(texts):
            if (vector := cache.vectors.get(text)) is not None:
                cache.vectors.move_to_end(text)
                known[text] = vector
            elif (pending := cache.pending.get(text)) is not None:
                awaited[text] = pending
            else:
                claimed[text] = Future()
                if len(text) <= MAX_CACHED_CHARS:
                    cache.pending[text] = claimed[text]
    if claimed:
        _embed_claimed(embeddings, cache, claimed)
        known.update((text, future.result()) for text, future in claimed.items())
    known.update((text, future.result()) for text, future in awaited.items())
    return np.stack([known[t] for t in texts])


def _embed_claimed(
    embeddings: Embeddings, cache: _Cache, claimed: dict[str, Future[np.ndarray]]
) -> None:
    """Embed the ``claimed`` texts in one batch, cache them and settle their futures; if
    embedding fails, the waiters get an error saying so and the failure is raised here."""
    missing = list(claimed)
    try:
        made = embeddings.embed_documents(missing)
        if len(made) != len(missing):
            raise EmbeddingsError(f"{len(made)} vectors came back for {len(missing)} texts")
        with cache.lock:
            for text, vector in zip(missing, made, strict=True):
                if cache.pending.pop(text, None) is not None:
                    cache.vectors[text] = vector
                claimed[text].set_result(vector)
            while len(cache.vectors) > MAX_CACHED_TEXTS:
                cache.vectors.popitem(last=False)
    except BaseException as exc:
        _fail_waiters(cache, claimed, exc)
        raise


def _fail_waiters(
    cache: _Cache, claimed: dict[str, Future[np.ndarray]], cause: BaseException
) -> None:
    """Give every unsettled future of ``claimed`` an error of its own (an interrupt of this
    thread is no interrupt of theirs) and let the next call embed those texts again."""
    with cache.lock:
        for text, future in claimed.items():
            cache.pending.pop(text, None)
            if not future.done():
                error = EmbeddingsError(f"embedding a text failed in another request: {cause}")
                error.__cause__ = cause if isinstance(cause, Exception) else None
                future.set_exception(error)


class QueryEmbedding(Protocol):
    """What embeds a query (an :class:`Embeddings`, or any object with ``embed_query``)."""

    def embed_query(self, text: str) -> np.ndarray:
        """The vector of one query."""
        ...


def embed_query_cached(embeddings: QueryEmbedding, text: str) -> np.ndarray:
    """``embeddings.embed_query(text)``, kept for the next :data:`MAX_CACHED_QUERIES` queries
    (a query's vector may differ from the same text's as a document, so they are apart)."""
    cache = _cache_of(embeddings, "_ragloom_query_cache")
    with cache.lock:
        vector = cache.vectors.get(text)
        if vector is not None:
            cache.vectors.move_to_end(text)
            return vector
    vector = np.asarray(embeddings.embed_query(text), dtype=np.float32)
    if len(text) <= MAX_CACHED_CHARS:
        with cache.lock:
            cache.vectors[text] = vector
            while len(cache.vectors) > MAX_CACHED_QUERIES:
                cache.vectors.popitem(last=False)
    return vector
