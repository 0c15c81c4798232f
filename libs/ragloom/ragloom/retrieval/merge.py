"""Merge the results of several retrievers (one per index) into one list."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Sequence

from ragloom.retrieval.base import Retriever
from ragloom.schema import RetrievedChunk
from ragloom.stores.base import StoreUnavailableError

__all__ = ["RetrievalError", "retrieve_from_all"]

logger = logging.getLogger(__name__)


class RetrievalError(RuntimeError):
    """Every retriever of a search failed; the first failure is the ``__cause__``."""


def retrieve_from_all(
    retrievers: Sequence[Retriever],
    query: str,
    top_k: int,
    *,
    stop: Callable[[], bool] | None = None,
) -> list[RetrievedChunk]:
    """The best ``top_k`` chunks over every retriever, each chunk once.

    Each retriever's list keeps its own order (MMR or reranking may have set it): the lists
    are merged by always taking the head with the highest score (the earlier retriever on
    a tie). Lists sorted by score merge into one sorted list.

    A retriever that raises is left out of this search, its error logged, so one broken
    index does not fail every question; when every retriever raises, :class:`RetrievalError`.
    ``stop`` is asked before each retriever: once it says so, the search ends with what it
    has (a tool call past its time limit).
    """
    queues: list[deque[RetrievedChunk]] = []
    failures: list[Exception] = []
    for retriever in retrievers:
        if stop is not None and stop():
            break
        try:
            queues.append(deque(retriever(query, top_k=top_k)))
        except Exception as exc:
            name = getattr(retriever, "name", type(retriever).__name__)
            logger.warning("retriever %s failed; left out of this search", name, exc_info=True)
            failures.append(exc)
    if failures and not queues:
        # A server that is down says so; other errors are the log's (their words may not
        # be meant for users).
        unavailable = [str(exc) for exc in failures if isinstance(exc, StoreUnavailableError)]
        why = unavailable[0] if unavailable else "every search raised an error"
        raise RetrievalError(f"searching the documents failed: {why}") from failures[0]
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
