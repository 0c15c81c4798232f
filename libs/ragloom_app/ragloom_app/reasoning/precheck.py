"""The check before answering, as every mode runs it: the retrieval step it may need, and
the agent modes' check before their agent starts (:mod:`ragloom.qa.precheck`)."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from typing import Any

from ragloom.events import Event, StepFinished, StepStarted
from ragloom.qa.precheck import TermLookup, stream_decline, stream_precheck
from ragloom.retrieval import Retriever, retrieve_from_all
from ragloom.schema import RetrievedChunk
from ragloom_app.reasoning.base import ReasoningState

__all__ = ["SEARCHING_LABEL", "checked_before_agent", "precheck_lookup", "stream_retrieval"]

SEARCHING_LABEL = "Searching the documents"


def precheck_lookup(values: Mapping[str, Any], state: ReasoningState) -> TermLookup | None:
    """The request's term lookup if the mode's ``precheck`` setting is on (default on)."""
    return state.find_terms if values.get("precheck", True) else None


def stream_retrieval(
    retrievers: Sequence[Retriever], question: str, top_k: int
) -> Generator[Event, None, list[RetrievedChunk]]:
    """The ``retrieve`` step: the ``top_k`` best passages of every retriever, merged."""
    started = time.perf_counter()
    yield StepStarted("retrieve", {"query": question, "top_k": top_k}, label=SEARCHING_LABEL)
    retrieved = retrieve_from_all(retrievers, question, top_k)
    yield StepFinished(
        "retrieve",
        time.perf_counter() - started,
        output=[
            {
                "source": r.chunk.source_name,
                "page": r.chunk.page,
                "score": round(r.score, 4),
                "found_by": {name: round(v, 4) for name, v in r.found_by.items()},
            }
            for r in retrieved
        ],
        label=SEARCHING_LABEL,
    )
    return retrieved


def checked_before_agent(
    question: str,
    agent_stream: Iterator[Event],
    find_terms: TermLookup | None,
    retrievers: Sequence[Retriever],
    top_k: int,
) -> Iterator[Event]:
    """An agent's events, unless the documents lack what ``question`` names: then a decline
    citing the ``top_k`` closest passages, and the agent (``agent_stream``, not started
    yet) never runs. The lookup needs no passage, so a declined question costs no LLM
    call: no plan, no sub-questions."""
    if find_terms is not None:
        check = yield from stream_precheck(question, [], find_terms)
        if check.declined:
            retrieved = yield from stream_retrieval(retrievers, question, top_k)
            yield from stream_decline(check, retrieved)
            return
    yield from agent_stream
