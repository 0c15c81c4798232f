"""Vectors of texts embedded before, kept by an embedding model: :func:`embed_cached`.

The sentence focus embeds every sentence of the passages a question retrieves, and the
passages of a team's documents come back again and again, question after question: under
load that embedding is most of an answer's work (71 of 93 ms a FullQA answer on the
speech, benchmarks/load.py). A model's vector of a text never changes, so each model
keeps the last :data:`MAX_CACHED_TEXTS` it made, and only texts it has not seen are
embedded, in one batch.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ragloom.embeddings.base import Embeddings

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


def _cache_of(embeddings: object, name: str = "_ragloom_text_cache") -> _Cache:
    with _LOCK:
        cache: _Cache | None = getattr(embeddings, name, None)
        if cache is None:
            cache = _Cache()
            setattr(embeddings, name, cache)
        return cache


def embed_cached(embeddings: Embeddings, texts: Sequence[str]) -> np.ndarray:
    """``embeddings.embed_documents(texts)``, embedding only the texts it has not kept."""
    cache = _cache_of(embeddings)
    with cache.lock:
        known = {t: cache.vectors[t] for t in texts if t in cache.vectors}
        for text in known:
            cache.vectors.move_to_end(text)
    missing = list(dict.fromkeys(t for t in texts if t not in known))
    if missing:
        made = embeddings.embed_documents(missing)
        with cache.lock:
            for text, vector in zip(missing, made, strict=True):
                if len(text) <= MAX_CACHED_CHARS:
                    cache.vectors[text] = vector
                known[text] = vector
            while len(cache.vectors) > MAX_CACHED_TEXTS:
                cache.vectors.popitem(last=False)
    if not texts:
        return embeddings.embed_documents([])
    return np.stack([known[t] for t in texts])


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
