"""Merge the results of several retrievers (one per index) into one list."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from ragloom.retrieval.base import Retriever
from ragloom.schema import RetrievedChunk

__all__ = ["retrieve_from_all"]


def retrieve_from_all(
    retrievers: Sequence[Retriever], query: str, top_k: int
) -> list[RetrievedChunk]:
    """The best ``top_k`` chunks over every retriever, each chunk once.

    Each retriever's list keeps its own order (MMR or reranking may have set it): the lists
    are merged by always taking the head with the highest score (the earlier retriever on
    a tie). Lists sorted by score merge into one sorted list.
    """
    queues = [deque(retriever(query, top_k=top_k)) for retriever in retrievers]
    merged: list[RetrievedChunk] = []
    seen: set[str] = set()
    while len(merged) < top_k:
        heads = [queue for queue in queues if queue]
        if not heads:
            break
        item = max(heads, key=lambda queue: queue[0].score).popleft()
        if item.chunk.id not in seen:
            seen.add(item.chunk.id)
            merged.append(item)
    return merged
