"""FullQA: retrieve from every index, answer in one LLM call, cite the evidence."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from theflow import Param

from ragloom.events import Event, StepFinished, StepStarted
from ragloom.qa import CitedAnswerer
from ragloom.retrieval import Retriever
from ragloom.schema import RetrievedChunk
from ragloom_app.reasoning.base import BaseReasoning, ReasoningInfo, ReasoningState, SettingSpec

__all__ = ["FullQAReasoning", "retrieve_from_all"]


def retrieve_from_all(
    retrievers: Sequence[Retriever], question: str, top_k: int
) -> list[RetrievedChunk]:
    """The best ``top_k`` chunks over every retriever, each chunk once."""
    best: dict[str, RetrievedChunk] = {}
    for retriever in retrievers:
        for item in retriever(question, top_k=top_k):
            known = best.get(item.chunk.id)
            if known is None or item.score > known.score:
                best[item.chunk.id] = item
    ranked = sorted(best.values(), key=lambda item: (-item.score, item.chunk.id))
    return ranked[:top_k]


class FullQAReasoning(BaseReasoning):
    """Direct question answering with citations (the default mode)."""

    retrievers: list[Retriever] = Param(default_callback=lambda _: [], help="Retrievers.")
    answerer: CitedAnswerer = Param(help="Writes the cited answer.")
    top_k: int = Param(3, help="Chunks of evidence to retrieve.")

    @classmethod
    def get_info(cls) -> ReasoningInfo:
        return ReasoningInfo(
            id="fullqa",
            name="FullQA",
            description="Retrieve the most relevant passages and answer in one step, "
            "citing each passage used.",
        )

    @classmethod
    def get_user_settings(cls) -> dict[str, SettingSpec]:
        return {
            "top_k": {
                "name": "Passages to retrieve",
                "value": 3,
                "component": "number",
                "info": "How many chunks of evidence the answer may draw on. The small "
                "default model answers best from three; larger models can use more.",
            },
        }

    @classmethod
    def get_pipeline(
        cls,
        settings: Mapping[str, Any],
        state: ReasoningState,
        retrievers: Sequence[Retriever],
    ) -> FullQAReasoning:
        values = cls.resolve_settings(settings)
        return cls(
            retrievers=list(retrievers),
            answerer=CitedAnswerer(llm=state.llm),
            top_k=int(values["top_k"]),
        )

    def stream(self, question: str) -> Iterator[Event]:
        started = time.perf_counter()
        yield StepStarted("retrieve", {"query": question, "top_k": self.top_k})
        retrieved = retrieve_from_all(self.retrievers, question, self.top_k)
        yield StepFinished(
            "retrieve",
            time.perf_counter() - started,
            output=[
                {"source": r.chunk.source_name, "page": r.chunk.page, "score": round(r.score, 4)}
                for r in retrieved
            ],
        )
        yield from self.answerer.stream(question, retrieved)
