"""Answer a question from numbered evidence with one LLM call, citing it as ``[n]``."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from theflow import Param

from ragloom.base import BaseComponent
from ragloom.events import (
    AnswerDelta,
    AnswerRevised,
    CitationsFound,
    Event,
    LLMCallFinished,
    StepFinished,
    StepStarted,
)
from ragloom.llms.base import ChatLLM, ChatMessage, GenerationOptions
from ragloom.qa.citations import attribute_uncited, build_evidence, citations_for
from ragloom.schema import RetrievedChunk

__all__ = ["DEFAULT_SYSTEM_PROMPT", "CitedAnswerer"]

DEFAULT_SYSTEM_PROMPT = (
    "You answer questions using only the numbered sources the user gives. Write one to "
    "three sentences in your own words. End each sentence with the number of the source it "
    "uses, in square brackets, like this: <sentence> [2]. If the sources do not answer the "
    "question, say that the documents do not say."
)

NO_EVIDENCE_ANSWER = "I found nothing in the indexed documents about this question."


class CitedAnswerer(BaseComponent):
    """Streams an answer to ``question`` from ``evidence``, then the citations it made.

    The prompt is laid out stable-first (system prompt, then evidence, then the question)
    so that a follow-up question over the same evidence reuses the evaluated prefix.
    """

    llm: ChatLLM = Param(help="The chat model that writes the answer.")
    system_prompt: str = Param(DEFAULT_SYSTEM_PROMPT, help="Instructions for the model.")
    max_answer_tokens: int = Param(384, help="Most tokens the answer may take.")
    max_evidence_tokens: int = Param(
        2400, help="Most tokens of evidence in the prompt (also capped by the context)."
    )

    def evidence_budget(self, question: str) -> int:
        """Tokens left for evidence once the instructions, question and answer fit."""
        fixed = self.llm.count_tokens(self.system_prompt) + self.llm.count_tokens(question)
        room = self.llm.context_window - self.max_answer_tokens - fixed - 64
        return max(0, min(self.max_evidence_tokens, room))

    def messages(self, question: str, evidence_text: str) -> list[ChatMessage]:
        """The chat messages of the prompt."""
        user = f"Sources:\n{evidence_text}\nQuestion: {question.strip()}\nAnswer:"
        return [
            ChatMessage("system", self.system_prompt),
            ChatMessage("user", user),
        ]

    def stream(self, question: str, retrieved: Sequence[RetrievedChunk]) -> Iterator[Event]:
        """Yield the answer as it is generated, then its citations and the call's usage."""
        evidence = build_evidence(retrieved, self.llm.count_tokens, self.evidence_budget(question))
        if not evidence.items:
            yield AnswerDelta(NO_EVIDENCE_ANSWER)
            yield CitationsFound([])
            return
        started = time.perf_counter()
        yield StepStarted("answer", {"evidence": len(evidence.items)})
        options = GenerationOptions(max_tokens=self.max_answer_tokens, temperature=0.0)
        answer = ""
        result = None
        for item in self.llm.stream(self.messages(question, evidence.text), options):
            if item.text:
                answer += item.text
                yield AnswerDelta(item.text)
            if item.result is not None:
                result = item.result
        revised = attribute_uncited(answer, evidence)
        if revised != answer:
            answer = revised
            yield AnswerRevised(answer)
        citations = citations_for(answer, evidence)
        yield StepFinished(
            "answer",
            time.perf_counter() - started,
            output={"cited": [c.number for c in citations]},
        )
        if result is not None:
            yield LLMCallFinished("answer", result.usage)
        yield CitationsFound(citations)

    def run(self, question: str, retrieved: Sequence[RetrievedChunk]) -> list[Event]:
        """All events of :meth:`stream`, as a list."""
        return list(self.stream(question, retrieved))
