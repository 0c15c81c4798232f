"""Reranking: re-order (or filter) a retriever's candidates after it has found them.

A :class:`Reranker` takes the question and a ranked list of chunks and returns them in a
new order, at most ``top_k``. :class:`RerankingRetriever` asks a retriever for more
candidates than it will return (``fetch_k``), passes them through its rerankers in turn
and keeps the ``top_k`` first. :class:`LLMReranker` asks an LLM, one chunk at a time,
whether the chunk is relevant; :class:`~ragloom.retrieval.mmr.MMRReranker` re-orders by
maximal marginal relevance.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Sequence

from theflow import Param

from ragloom.base import BaseComponent
from ragloom.llms.base import ChatLLM, ChatMessage, GenerationOptions, LLMError
from ragloom.retrieval.base import Retriever
from ragloom.schema import RetrievedChunk

__all__ = [
    "DEFAULT_RELEVANCE_PROMPT",
    "YES_NO_GRAMMAR",
    "LLMReranker",
    "Reranker",
    "RerankingRetriever",
]

logger = logging.getLogger(__name__)

YES_NO_GRAMMAR = 'root ::= "Yes" | "No" | "yes" | "no"'
"""GBNF that lets the model say only yes or no (one token each for Qwen).

Both cases are allowed on purpose: Qwen2.5-0.5B answers "Yes" with a capital, and held to
lower case alone it said "no" even to a passage that plainly answers the question.
"""

DEFAULT_RELEVANCE_PROMPT = (
    "You decide whether a passage helps to answer a question. Reply with one word: yes or no."
)


class Reranker(BaseComponent):
    """Re-orders retrieved chunks for a question; returns at most ``top_k``, best first."""

    def run(self, query: str, hits: Sequence[RetrievedChunk], top_k: int) -> list[RetrievedChunk]:
        """The chunks of ``hits`` in their new order, at most ``top_k`` of them."""
        raise NotImplementedError(f"{type(self).__name__} must implement run()")


class RerankingRetriever(Retriever):
    """Fetches ``fetch_k`` candidates from ``inner``, reranks them, returns the ``top_k`` best.

    Every reranker but the last orders the whole candidate list, so the last one (which
    may stop early, as :class:`LLMReranker` does) sees every candidate in that order.
    """

    inner: Retriever = Param(help="The retriever whose candidates are reranked.")
    rerankers: list[Reranker] = Param(
        default_callback=lambda _: [], help="Applied in order to the candidates."
    )
    fetch_k: int | None = Param(None, help="Candidates asked of inner; None: 4 × top_k.")

    @property
    def name(self) -> str:
        """The inner retriever's name: reranking finds nothing new."""
        return self.label or self.inner.name

    @property
    def comparable_scores(self) -> bool:
        """The inner retriever's: reranking changes the order, not the scores."""
        return self.inner.comparable_scores

    def run(
        self,
        query: str,
        top_k: int | None = None,
        source_ids: Collection[str] | None = None,
    ) -> list[RetrievedChunk]:
        """The ``top_k`` best candidates after reranking; scores and found_by unchanged."""
        k = self.resolve_k(top_k)
        if k == 0:
            return []
        fetch = max(k, self.fetch_k if self.fetch_k is not None else 4 * k)
        hits = list(self.inner(query, top_k=fetch, source_ids=source_ids))
        rerankers = list(self.rerankers)
        for position, reranker in enumerate(rerankers):
            if not hits:
                break
            last = position == len(rerankers) - 1
            hits = list(reranker(query, hits, top_k=k if last else len(hits)))
        return hits[:k]


class LLMReranker(Reranker):
    """Keeps the chunks an LLM judges relevant (yes/no, one call per chunk), in order.

    The judgement is constrained to ``yes`` or ``no`` by a grammar. Chunks are judged in
    their given order until ``top_k`` are kept or ``max_candidates`` have been judged; a
    ``top_k`` above ``max_candidates`` gets its places past them filled with the chunks
    not judged, in their given order. If none is
    judged relevant, the first ``top_k`` are returned as they came, since an answer from
    the best guesses beats no evidence at all. The question comes before the passage in
    the prompt, so llama.cpp reuses the evaluated system prompt and question from one
    chunk to the next.

    A judge that fails (the model busy past the answer's deadline, an endpoint down)
    ends the judging, logged: the chunks kept so far come first, then the ones not
    judged (the failed one among them) in their given order, up to ``top_k``, and if
    that is too few, those judged "no", in order. Reranking
    refines a search; it must not cost the answer its evidence.
    """

    llm: ChatLLM = Param(help="The model that judges each chunk.")
    system_prompt: str = Param(DEFAULT_RELEVANCE_PROMPT, help="Instructions for the judge.")
    max_candidates: int = Param(8, help="Most chunks judged per question (one call each).")

    def messages(self, query: str, passage: str) -> list[ChatMessage]:
        """The prompt that asks whether ``passage`` is relevant to ``query``."""
        text = " ".join(passage.split())
        user = (
            f"Question: {query.strip()}\n\nPassage: {text}\n\n"
            "Is this passage relevant to the question? Answer yes or no."
        )
        return [ChatMessage("system", self.system_prompt), ChatMessage("user", user)]

    def is_relevant(self, query: str, hit: RetrievedChunk) -> bool:
        """One LLM call: does the model say the chunk is relevant?"""
        options = GenerationOptions(max_tokens=3, temperature=0.0, grammar=YES_NO_GRAMMAR)
        reply = self.llm.run(self.messages(query, hit.chunk.text), options).text
        # Models without grammar support may add punctuation or capitals: read the word.
        return reply.strip().lower().lstrip("\"'*").startswith("yes")

    def run(self, query: str, hits: Sequence[RetrievedChunk], top_k: int) -> list[RetrievedChunk]:
        """The relevant chunks in their given order, then the unjudged ones up to ``top_k``
        (or the first ``top_k`` if none is relevant and the judge did not fail)."""
        if top_k <= 0 or not hits:
            return []
        started = time.perf_counter()
        kept: list[RetrievedChunk] = []
        judged = 0
        failed = False
        for hit in hits[: max(0, self.max_candidates)]:
            try:
                relevant = self.is_relevant(query, hit)
            except Exception as exc:
                failed = True
                # An LLM that is busy or away is an expected state, said in its own words;
                # anything else is a bug, whose traceback the log needs.
                logger.warning(
                    "LLM rerank stopped after %d of %d judged, the rest in search order: %s: %s",
                    judged,
                    len(hits),
                    type(exc).__name__,
                    exc,
                    exc_info=not isinstance(exc, LLMError),
                )
                break
            judged += 1
            if relevant:
                kept.append(hit)
                if len(kept) >= top_k:
                    break
        logger.info(
            "LLM rerank: %d of %d judged relevant in %.2f s",
            len(kept),
            judged,
            time.perf_counter() - started,
        )
        if not kept and not failed:
            return list(hits[:top_k])
        # Chunks judged "no" stay out. Those never judged are the retriever's next best
        # guesses: after a failure, in every place left; otherwise only in the places
        # past max_candidates, which the judge never had (below them, most of what it
        # judged was "no", and the next candidates are likely no better).
        room = top_k - len(kept)
        if not failed:
            room = min(room, max(0, top_k - self.max_candidates))
        chosen = kept + list(hits[judged : judged + room])
        if failed and len(chosen) < top_k:
            # Too few left after the failure: those judged "no" come back, in order, as
            # when every one is judged "no" (best guesses beat no evidence).
            taken = {hit.chunk.id for hit in chosen}
            refused = [hit for hit in hits[:judged] if hit.chunk.id not in taken]
            chosen += refused[: top_k - len(chosen)]
        return chosen
