"""Retrievers limited in which sources they return: a fixed set (the files a user
selected), or every source but some (those no longer searchable)."""

from __future__ import annotations

from collections.abc import Collection

from theflow import Param

from ragloom.retrieval.base import Retriever
from ragloom.schema import RetrievedChunk

__all__ = ["ExcludingRetriever", "RestrictedRetriever"]


class _SourceLimitedRetriever(Retriever):
    """``inner`` under its own name, with fewer of the sources it could return."""

    inner: Retriever = Param(help="The retriever to limit.")

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def comparable_scores(self) -> bool:
        return self.inner.comparable_scores


class RestrictedRetriever(_SourceLimitedRetriever):
    """Searches ``inner`` within ``source_ids`` only (narrowed further if a call says so)."""

    source_ids: list[str] = Param(default_callback=lambda _: [], help="Sources to search.")

    def run(
        self,
        query: str,
        top_k: int | None = None,
        source_ids: Collection[str] | None = None,
    ) -> list[RetrievedChunk]:
        allowed = set(self.source_ids)
        if source_ids is not None:
            allowed &= set(source_ids)
        hits: list[RetrievedChunk] = self.inner(
            query, top_k=self.resolve_k(top_k), source_ids=allowed
        )
        return hits


class ExcludingRetriever(_SourceLimitedRetriever):
    """Searches ``inner`` but never returns chunks of ``excluded_ids``.

    For sources a store may still hold chunks of after they stopped being searchable (a
    removal or a failure whose clean-up could not reach a store). Stores filter only on
    what to include, so their hits are dropped after the search: it asks ``inner`` for
    twice ``top_k``, then four times more while too few are left and more may be there,
    up to ``max_fetch`` hits. Past that, fewer than ``top_k`` come back, never theirs.
    """

    excluded_ids: list[str] = Param(default_callback=lambda _: [], help="Sources never shown.")
    max_fetch: int = Param(1000, help="The most hits asked of inner for one search.")

    def run(
        self,
        query: str,
        top_k: int | None = None,
        source_ids: Collection[str] | None = None,
    ) -> list[RetrievedChunk]:
        k = self.resolve_k(top_k)
        excluded = set(self.excluded_ids)
        ask = min(2 * k, self.max_fetch)
        while True:
            hits: list[RetrievedChunk] = self.inner(query, top_k=ask, source_ids=source_ids)
            kept = [hit for hit in hits if hit.chunk.source_id not in excluded]
            if len(kept) >= k or len(hits) < ask or ask >= self.max_fetch:
                return kept[:k]
            ask = min(4 * ask, self.max_fetch)
