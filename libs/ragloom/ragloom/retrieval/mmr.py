"""Maximal marginal relevance (MMR): relevant chunks that do not repeat each other.

MMR (Carbonell & Goldstein, 1998) picks chunks one at a time, each maximising
``λ · relevance − (1 − λ) · max similarity to the chunks already picked``. Overlapping
chunks of one passage then no longer fill every evidence slot.

Here relevance is the retriever's own score rescaled to [0, 1] over the candidates
(min-max), not the cosine of the chunk to the question: the fused order of a hybrid (or
BM25) search stays the measure of relevance, and embeddings serve only to see
redundancy. Chunk vectors come from the vector store by id (about a millisecond with
Chroma); only chunks it cannot give are embedded again (about 50 ms each on 2 cores).
While the store's server is away, every chunk is embedded again, or, with no embedder,
the candidates keep the retriever's order: MMR must not fail a search that answers
without the vectors (a hybrid search falls back to full text).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from theflow import Param

from ragloom.embeddings.base import Embeddings
from ragloom.retrieval.rerank import Reranker
from ragloom.schema import RetrievedChunk
from ragloom.stores.base import StoreUnavailableError, VectorStore

__all__ = ["MMRReranker", "mmr_order"]

logger = logging.getLogger(__name__)


def _rescale(scores: Sequence[float]) -> np.ndarray:
    values = np.asarray(scores, dtype=np.float64)
    low, high = float(values.min()), float(values.max())
    if high - low <= 1e-12:  # all equal: equally relevant
        return np.ones_like(values)
    return (values - low) / (high - low)


def mmr_order(
    relevance: Sequence[float], vectors: np.ndarray, lambda_mult: float, k: int
) -> list[int]:
    """Positions of up to ``k`` items in MMR order.

    ``relevance[i]`` is item ``i``'s relevance (any scale; it is rescaled to [0, 1]) and
    ``vectors[i]`` its embedding (normalised here, so a dot product is a cosine).
    ``lambda_mult`` 1 keeps the relevance order; 0 maximises diversity alone. Ties go to
    the earlier item, so equal inputs give equal outputs.
    """
    if not 0.0 <= lambda_mult <= 1.0:
        raise ValueError(f"lambda_mult must be in [0, 1], got {lambda_mult}")
    count = len(relevance)
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != count:
        raise ValueError(f"need one vector per item ({count}), got shape {matrix.shape}")
    k = min(max(0, k), count)
    if k == 0:
        return []
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = matrix / np.where(norms == 0.0, 1.0, norms)
    similarity = unit @ unit.T
    rel = _rescale(relevance)
    chosen: list[int] = []
    # The highest similarity of each item to any chosen item; nothing chosen yet.
    redundancy = np.full(count, -np.inf)
    available = np.ones(count, dtype=bool)
    for _ in range(k):
        penalty = np.where(np.isinf(redundancy), 0.0, redundancy)
        gain = lambda_mult * rel - (1.0 - lambda_mult) * penalty
        gain[~available] = -np.inf
        best = int(np.argmax(gain))  # argmax returns the first of equal values
        chosen.append(best)
        available[best] = False
        redundancy = np.maximum(redundancy, similarity[best])
    return chosen


class MMRReranker(Reranker):
    """Re-orders chunks by maximal marginal relevance (see the module docstring)."""

    vector_store: VectorStore | None = Param(None, help="Gives the chunks' vectors by id.")
    embeddings: Embeddings | None = Param(
        None, help="Embeds the chunks the store cannot give (same model as the index)."
    )
    lambda_mult: float = Param(0.5, help="1: relevance only; 0: diversity only.")

    def chunk_vectors(self, hits: Sequence[RetrievedChunk]) -> np.ndarray:
        """One vector per hit: from the store where it has them, else embedded again.

        Raises :class:`~ragloom.stores.base.StoreUnavailableError` when the store is away
        and there are no ``embeddings`` to embed the chunks with.
        """
        store = self.vector_store
        found: dict[str, np.ndarray] = {}
        if store is not None:
            try:
                found = store.vectors([h.chunk.id for h in hits])
            except StoreUnavailableError as exc:
                if self.embeddings is None:
                    raise
                logger.warning("MMR: %s; embedding the %d chunks again", exc, len(hits))
        missing = [h for h in hits if h.chunk.id not in found]
        if missing:
            if self.embeddings is None:
                raise ValueError(
                    f"MMR needs vectors for {len(missing)} chunks: give embeddings= to embed "
                    "them, or a vector store that has them"
                )
            logger.debug("MMR: embedding %d chunks the store did not give", len(missing))
            embedded = self.embeddings.embed_documents([h.chunk.text for h in missing])
            found = {**found, **{h.chunk.id: v for h, v in zip(missing, embedded, strict=True)}}
        return np.stack([np.asarray(found[h.chunk.id], dtype=np.float32) for h in hits])

    def run(self, query: str, hits: Sequence[RetrievedChunk], top_k: int) -> list[RetrievedChunk]:
        """Up to ``top_k`` of ``hits`` in MMR order; scores and found_by unchanged (the
        first ``top_k`` as they came if the store is away and nothing can embed them)."""
        items = list(hits)
        if len(items) <= 1 or top_k <= 0:
            return items[: max(0, top_k)]
        try:
            vectors = self.chunk_vectors(items)
        except StoreUnavailableError as exc:
            logger.warning("MMR skipped, the search's order kept: %s", exc)
            return items[:top_k]
        order = mmr_order([h.score for h in items], vectors, float(self.lambda_mult), top_k)
        return [items[i] for i in order]
