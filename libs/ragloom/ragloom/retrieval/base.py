"""Retrievers: components that turn a question into a ranked list of chunks.

A retriever wraps one store. Stores, embedders and lists of retrievers are held in plain
theflow ``Param``s, not ``Node``s: theflow wraps a ``Node`` that is not a ``Function`` in a
proxy and, during a run, hands out a call wrapper instead of the object, which would hide
methods such as ``store.query``. A ``Param`` keeps the object as given (no copy, no pickle).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Protocol, runtime_checkable

import numpy as np
from theflow import Param

from ragloom.base import BaseComponent
from ragloom.embeddings.cache import embed_query_cached
from ragloom.schema import RetrievedChunk
from ragloom.stores.base import FullTextStore, VectorStore

__all__ = ["FullTextRetriever", "QueryEmbedder", "Retriever", "VectorRetriever"]

logger = logging.getLogger(__name__)


@runtime_checkable
class QueryEmbedder(Protocol):
    """Anything that embeds a question into one vector (shape ``(dim,)``)."""

    def embed_query(self, text: str) -> np.ndarray:
        """The embedding of ``text`` as a query."""
        ...


class Retriever(BaseComponent):
    """Finds the chunks most relevant to a question, best first.

    ``found_by`` of each result maps :attr:`name` to this retriever's own score, so a
    fusion of several retrievers can show where each chunk came from.
    """

    top_k: int = Param(5, help="How many chunks run() returns when not told otherwise.")
    label: str = Param("", help="Key of this retriever in found_by; empty: its default name.")

    default_name = "retriever"

    @property
    def name(self) -> str:
        """This retriever's key in ``found_by`` (``label`` if set, else ``default_name``)."""
        return self.label or self.default_name

    @property
    def comparable_scores(self) -> bool:
        """Whether this retriever's scores mean the same in every index searched this way.

        Only then can the lists of several indices be merged by score. False unless a
        retriever knows better: a BM25 score depends on its corpus (its document
        frequencies and lengths), so 2.4 in a large archive says nothing against 0.7 in a
        small index. Wrappers answer for the retriever they wrap.
        """
        return False

    def resolve_k(self, top_k: int | None) -> int:
        """``top_k`` if given, else the ``top_k`` param; never negative."""
        return max(0, int(self.top_k if top_k is None else top_k))

    def run(
        self,
        query: str,
        top_k: int | None = None,
        source_ids: Collection[str] | None = None,
    ) -> list[RetrievedChunk]:
        """The ``top_k`` best chunks for ``query``, restricted to ``source_ids`` if given.

        An empty ``source_ids`` matches nothing; ``None`` searches every source.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement run()")


class VectorRetriever(Retriever):
    """Chunks whose embedding is closest to the question's (cosine similarity)."""

    store: VectorStore = Param(help="The vector store to search.")
    embeddings: QueryEmbedder = Param(help="Embeds the question (same model as the chunks).")

    default_name = "vector"

    @property
    def comparable_scores(self) -> bool:
        """True: a cosine similarity is on the same scale in every index (the app embeds
        every index with one model)."""
        return True

    def run(
        self,
        query: str,
        top_k: int | None = None,
        source_ids: Collection[str] | None = None,
    ) -> list[RetrievedChunk]:
        """The ``top_k`` most similar chunks; ``found_by`` holds the cosine similarity."""
        store, embedder = self.store, self.embeddings
        if not isinstance(store, VectorStore):
            raise TypeError(f"{type(self).__name__}.store must be a VectorStore, got {store!r}")
        if not isinstance(embedder, QueryEmbedder):
            raise TypeError(
                f"{type(self).__name__}.embeddings needs embed_query(), got {embedder!r}"
            )
        k = self.resolve_k(top_k)
        if k == 0 or not query.strip():
            return []
        # The focus embeds the same question again: it finds this vector kept.
        vector = embed_query_cached(embedder, query)
        hits = store.query(vector, k, source_ids)
        logger.debug("%s: %d hits for %r", self.name, len(hits), query)
        return [RetrievedChunk(chunk, score, {self.name: score}) for chunk, score in hits]


class FullTextRetriever(Retriever):
    """Chunks sharing the question's terms, ranked by BM25.

    Its scores are not :attr:`~Retriever.comparable_scores`: BM25 weighs a term by how
    rare it is in this index, so another index's scores are on a scale of their own.
    """

    store: FullTextStore = Param(help="The full-text store to search.")

    default_name = "fulltext"

    def run(
        self,
        query: str,
        top_k: int | None = None,
        source_ids: Collection[str] | None = None,
    ) -> list[RetrievedChunk]:
        """The ``top_k`` best BM25 matches; ``found_by`` holds the BM25 score."""
        store = self.store
        if not isinstance(store, FullTextStore):
            raise TypeError(f"{type(self).__name__}.store must be a FullTextStore, got {store!r}")
        k = self.resolve_k(top_k)
        if k == 0:
            return []
        hits = store.query(query, k, source_ids)
        logger.debug("%s: %d hits for %r", self.name, len(hits), query)
        return [RetrievedChunk(chunk, score, {self.name: score}) for chunk, score in hits]
