"""A retriever limited to a fixed set of sources (the files a user selected)."""

from __future__ import annotations

from collections.abc import Collection

from theflow import Param

from ragloom.retrieval.base import Retriever
from ragloom.schema import RetrievedChunk

__all__ = ["RestrictedRetriever"]


class RestrictedRetriever(Retriever):
    """Searches ``inner`` within ``source_ids`` only (narrowed further if a call says so)."""

    inner: Retriever = Param(help="The retriever to restrict.")
    source_ids: list[str] = Param(default_callback=lambda _: [], help="Sources to search.")

    @property
    def name(self) -> str:
        return self.inner.name

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
