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

    Each retriever's list keeps its own order (MMR or reranking may have set it). When
    every retriever has the same :attr:`~Retriever.name` and its scores are
    :attr:`~Retriever.comparable_scores`, they are on one scale (two indices' hybrid
    searches both score by fused rank, two vector searches by cosine similarity), and the
    lists are merged by always taking the head with the highest score: lists sorted by
    score merge into one sorted list. Otherwise the scores cannot be compared: a BM25
    score of 12 beats any cosine, and two indices' BM25 scores each depend on their own
    corpus (a word common in one is rare in the other). Those lists are merged by rank
    instead: each one's first, then each one's second... Either way the earlier retriever
    wins a tie.

    A retriever that raises is left out of this search, its error logged, so one broken
    index does not fail every question; when every retriever raises, :class:`RetrievalError`.
    ``stop`` is asked before each retriever: once it says so, the search ends with what it
    has (a tool call past its time limit).
    """
    queues: list[deque[RetrievedChunk]] = []
    kinds: set[str] = set()
    comparable = True
    failures: list[Exception] = []
    for retriever in retrievers:
        if stop is not None and stop():
            break
        name = str(getattr(retriever, "name", type(retriever).__name__))
        try:
            queues.append(deque(retriever(query, top_k=top_k)))
            kinds.add(name)
            comparable = comparable and bool(getattr(retriever, "comparable_scores", False))
        except Exception as exc:
            logger.warning("retriever %s failed; left out of this search", name, exc_info=True)
            failures.append(exc)
    if failures and not queues:
        # A server that is down says so; other errors are the log's (their words may not
        # be meant for users).
        unavailable = [str(exc) for exc in failures if isinstance(exc, StoreUnavailableError)]
        why = unavailable[0] if unavailable else "every search raised an error"
        raise RetrievalError(f"searching the documents failed: {why}") from failures[0]
    # Not by rescaling each list (min-max): that makes every list's head 1.0 whatever it
    # matched, which is taking turns at the top with more arbitrary order below.
    by_score = len(kinds) <= 1 and comparable
    taken = [0] * len(queues)
    merged: list[RetrievedChunk] = []
    seen: set[str] = set()
    while len(merged) < top_k:
        heads = [n for n, queue in enumerate(queues) if queue]
        if not heads:
            break
        if by_score:
            best = max(heads, key=lambda n: queues[n][0].score)
        else:
            best = min(heads, key=lambda n: taken[n])
        taken[best] += 1
        item = queues[best].popleft()
        if item.chunk.id not in seen:
            seen.add(item.chunk.id)
            merged.append(item)
    return merged
