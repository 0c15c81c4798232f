"""The ``verified`` mode: answer as FullQA does, then check each sentence against the
passages it cites and mark the sentences they do not support.

The check is lexical: a sentence is supported when its cited passages hold at least
``min_support`` of its content words. It catches a small model's invented numbers and
names cheaply; it cannot tell a faithful paraphrase from a wrong one.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from theflow import Param

from ragloom.events import (
    AnswerDelta,
    AnswerRevised,
    Citation,
    CitationsFound,
    Event,
    GroundingChecked,
    StepFinished,
    StepStarted,
)
from ragloom.qa.citations import cited_numbers, content_words, split_sentences, strip_citations
from ragloom.retrieval import Retriever
from ragloom_app.reasoning.base import BaseReasoning, ReasoningInfo, ReasoningState, SettingSpec
from ragloom_app.reasoning.fullqa import FullQAReasoning

__all__ = ["UNSUPPORTED", "VerifiedReasoning", "verify_answer"]

UNSUPPORTED = " (unsupported)"
"""What is added to a sentence that its passages do not support."""


def _mark(sentence: str) -> str:
    """``sentence`` with :data:`UNSUPPORTED` before its final punctuation."""
    body = sentence.rstrip()
    stripped = body.rstrip(".!?")
    return f"{stripped}{UNSUPPORTED}{body[len(stripped) :]}{sentence[len(body) :]}"


def verify_answer(
    answer: str, citations: Sequence[Citation], min_support: float
) -> tuple[str, list[dict[str, Any]]]:
    """The answer with unsupported sentences marked, and the check of each sentence.

    A sentence citing ``[n]`` is checked against passage n; one citing nothing against
    every cited passage. An answer that cites nothing is left as it is: it claims
    nothing from the documents.
    """
    passages = {c.number: content_words(c.text) for c in citations}
    if not passages:
        return answer, []
    everything = set().union(*passages.values())
    pieces, checks = [], []
    for sentence in split_sentences(answer):
        words = content_words(strip_citations(sentence))
        if not words:
            pieces.append(sentence)
            continue
        cited = cited_numbers(sentence)
        known = set().union(*(passages.get(n, set()) for n in cited)) if cited else everything
        support = len(words & known) / len(words)
        supported = support >= min_support
        checks.append({"sentence": sentence.strip(), "cites": cited, "support": round(support, 2)})
        pieces.append(sentence if supported else _mark(sentence))
    return "".join(pieces), checks


class VerifiedReasoning(BaseReasoning):
    """FullQA, then each sentence checked against the passages it cites."""

    inner: FullQAReasoning = Param(help="The FullQA pipeline that writes the answer.")
    min_support: float = Param(0.5, help="Share of content words the passages must hold.")

    @classmethod
    def get_info(cls) -> ReasoningInfo:
        return ReasoningInfo(
            id="verified",
            name="Verified answer",
            description="Answer like FullQA, then check each sentence against the passages "
            "it cites and mark the ones they do not support.",
        )

    @classmethod
    def get_user_settings(cls) -> dict[str, SettingSpec]:
        return {
            **FullQAReasoning.get_user_settings(),
            "min_support": {
                "name": "Support needed",
                "value": 0.5,
                "component": "number",
                "minimum": 0.0,
                "maximum": 1.0,
                "step": 0.1,
                "info": "Share of a sentence's content words its cited passages must hold; "
                "below it the sentence is marked (unsupported).",
            },
        }

    @classmethod
    def get_pipeline(
        cls,
        settings: Mapping[str, Any],
        state: ReasoningState,
        retrievers: Sequence[Retriever],
    ) -> VerifiedReasoning:
        values = cls.resolve_settings(settings)
        inner = FullQAReasoning.get_pipeline(values, state, retrievers)
        return cls(inner=inner, min_support=float(values["min_support"]))

    def stream(self, question: str) -> Iterator[Event]:
        answer, citations, declined = "", [], False
        for event in self.inner.stream(question):
            if isinstance(event, CitationsFound):
                citations = list(event.citations)  # held back: they close the answer
                continue
            if isinstance(event, AnswerDelta):
                answer += event.text
            elif isinstance(event, AnswerRevised):
                answer = event.text
            elif isinstance(event, GroundingChecked):
                declined = event.report.declined
            yield event
        if declined:
            # FullQA's own check replaced the answer with a decline: Ragloom's words, which
            # name the passages it found, not claims for this check to mark.
            yield CitationsFound(citations)
            return
        started = time.perf_counter()
        yield StepStarted("verify", {"min_support": self.min_support})
        revised, checks = verify_answer(answer, citations, self.min_support)
        unsupported = sum(c["support"] < self.min_support for c in checks)
        yield StepFinished(
            "verify",
            time.perf_counter() - started,
            output={"sentences": checks, "unsupported": unsupported},
        )
        if revised != answer:
            yield AnswerRevised(revised)
        yield CitationsFound(citations)
