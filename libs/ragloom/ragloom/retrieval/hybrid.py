"""Hybrid retrieval: several retrievers merged by reciprocal-rank fusion (RRF).

Cosine similarities and BM25 scores live on unrelated scales, so they cannot be added;
RRF uses only each list's ranks: a chunk scores ``sum(1 / (rrf_k + rank))`` over the lists
that found it (Cormack et al., 2009). ``rrf_k = 60`` is the paper's value; a larger
``rrf_k`` flattens the advantage of the first places.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from theflow import Param

from ragloom.retrieval.base import Retriever
from ragloom.retrieval.rerank import Reranker
from ragloom.schema import RetrievedChunk
from ragloom.stores.base import StoreUnavailableError

__all__ = ["HybridRetriever", "reciprocal_rank_fusion"]

logger = logging.getLogger(__name__)


@dataclass
class _Fused:
    hit: RetrievedChunk
    best_rank: int
    first_list: int
    contributions: list[float] = field(default_factory=list)


def reciprocal_rank_fusion(
    ranked: Mapping[str, Sequence[RetrievedChunk]], rrf_k: int = 60
) -> list[RetrievedChunk]:
    """Merge ranked lists (keyed by retriever name) into one, best first.

    Each chunk appears once; its ``score`` is the fused score and its ``found_by`` holds
    every list's own score for it (a list's ``found_by`` entries are kept as they are, or
    ``{name: score}`` if it has none). Ties go to the better single rank, then to the list
    given first, then to the smaller chunk id, so the order never depends on chance.
    """
    if rrf_k < 0:
        raise ValueError("rrf_k must not be negative")
    fused: dict[str, _Fused] = {}
    for list_index, (name, hits) in enumerate(ranked.items()):
        seen: set[str] = set()
        for rank, hit in enumerate(hits, start=1):
            chunk_id = hit.chunk.id
            if chunk_id in seen:  # a list that repeats a chunk counts its best rank only
                continue
            seen.add(chunk_id)
            entry = fused.get(chunk_id)
            if entry is None:
                entry = _Fused(RetrievedChunk(hit.chunk, 0.0, {}), rank, list_index)
                fused[chunk_id] = entry
            entry.best_rank = min(entry.best_rank, rank)
            entry.contributions.append(1.0 / (rrf_k + rank))
            entry.hit.found_by.update(hit.found_by or {name: hit.score})
    for entry in fused.values():
        # fsum is exact, so equal sets of ranks give equal scores whatever their order.
        entry.hit.score = math.fsum(entry.contributions)
    ordered = sorted(
        fused.values(),
        key=lambda e: (-e.hit.score, e.best_rank, e.first_list, e.hit.chunk.id),
    )
    return [entry.hit for entry in ordered]


class HybridRetriever(Retriever):
    """Runs each retriever for ``fetch_k`` chunks and fuses their ranks (RRF).

    The retrievers are called one after the other: on a 2-core machine the query
    embedding already uses both cores, and BM25 takes well under a millisecond. One whose
    store cannot be reached (:class:`~ragloom.stores.base.StoreUnavailableError`) is left
    out of the fusion, logged; only when every one is away does the search fail. A ``prior``
    (:class:`~ragloom.retrieval.definitions.DefinitionPrior`) orders all the candidates
    the retrievers found, up to ``2 × fetch_k``, before the ``top_k`` are kept.
    """

    retrievers: list[Retriever] = Param(
        default_callback=lambda _: [],
        help="The retrievers to fuse; their names (found_by keys) must differ.",
    )
    rrf_k: int = Param(60, help="RRF constant k in 1 / (k + rank).")
    fetch_k: int | None = Param(None, help="Chunks asked of each retriever; None: 4 × top_k.")
    prior: Reranker | None = Param(
        None, help="Orders every fused candidate before the top_k are kept (DefinitionPrior)."
    )

    default_name = "hybrid"

    @property
    def comparable_scores(self) -> bool:
        """True: a fused score depends only on the chunk's ranks in each list (and rrf_k),
        never on the corpus, so two indices' hybrid searches score on one scale."""
        return True

    def run(
        self,
        query: str,
        top_k: int | None = None,
        source_ids: Collection[str] | None = None,
    ) -> list[RetrievedChunk]:
        """The ``top_k`` best chunks by fused rank; ``found_by`` holds each retriever's score."""
        retrievers = list(self.retrievers)
        if not retrievers:
            raise ValueError("HybridRetriever needs at least one retriever")
        names = [r.name for r in retrievers]
        if len(set(names)) != len(names):
            raise ValueError(f"retriever names must differ (set label=...): {names}")
        k = self.resolve_k(top_k)
        if k == 0:
            return []
        fetch = max(k, self.fetch_k if self.fetch_k is not None else 4 * k)
        ranked: dict[str, list[RetrievedChunk]] = {}
        away: list[StoreUnavailableError] = []
        for retriever in retrievers:
            try:
                ranked[retriever.name] = retriever(query, top_k=fetch, source_ids=source_ids)
            except StoreUnavailableError as exc:
                # One store's server away (a Chroma server restarting): the others' lists
                # still answer, as a keyword search does while the vectors are away.
                logger.warning("%s: %s left out of this search: %s", self.name, retriever.name, exc)
                away.append(exc)
        if not ranked:
            raise away[0]
        logger.debug("%s: %s", self.name, {name: len(hits) for name, hits in ranked.items()})
        fused = reciprocal_rank_fusion(ranked, rrf_k=self.rrf_k)
        if self.prior is not None:
            fused = list(self.prior(query, fused, top_k=len(fused)))
        return fused[:k]
