"""Answer a question from numbered evidence with one LLM call, citing it as ``[n]``."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Generator, Iterator, Sequence

from theflow import Param

from ragloom.base import BaseComponent
from ragloom.events import (
    AnswerDelta,
    AnswerRevised,
    Citation,
    CitationsFound,
    Event,
    LLMCallFinished,
    StepFinished,
    StepStarted,
)
from ragloom.llms.base import ChatLLM, ChatMessage, GenerationOptions, LLMBusyError, Usage
from ragloom.qa.citations import (
    EvidenceBlock,
    attribute_uncited,
    build_evidence,
    citations_for,
    has_words,
    strip_citations,
)
from ragloom.qa.grounding import GroundingCheck, attribute_by_specifics, ground_answer
from ragloom.retrieval.focus import SentenceFocus
from ragloom.schema import RetrievedChunk

__all__ = [
    "ANSWER_INSTRUCTIONS",
    "ANSWER_LABEL",
    "CUT_AT_LENGTH",
    "DEFAULT_SYSTEM_PROMPT",
    "MAX_HISTORY_TURNS",
    "MAX_HISTORY_TURN_CHARS",
    "NO_EVIDENCE_ANSWER",
    "CitedAnswerer",
    "bare_answer_notice",
    "cite_answer",
    "stream_cited_answer",
]

logger = logging.getLogger(__name__)

ANSWER_INSTRUCTIONS = (
    "Write two to four sentences in your own words that give every fact from the sources "
    "the question asks about. Cite a source by putting its number in square brackets at the "
    "end of the sentence that uses it. If the sources do not answer the question, say that "
    "the documents do not say."
)
"""How every mode's answering call writes and cites (wordings compared in docs/performance.md)."""

DEFAULT_SYSTEM_PROMPT = (
    f"You answer a question using only the numbered sources given. {ANSWER_INSTRUCTIONS}"
)

ANSWER_LABEL = "Writing the answer"
"""What the user reads while an answer is written."""
CUT_AT_LENGTH = "Cut short: the model stopped at its length limit."
"""What ends an answer the model was stopped in (its finish reason ``length``: its
``max_tokens``, or a local model's context window, whichever came first)."""
NO_EVIDENCE_ANSWER = "I found nothing in the indexed documents about this question."
MAX_HISTORY_TURNS = 4
"""Earlier turns of a conversation an answer's prompt shows (two questions and answers)."""
MAX_HISTORY_TURN_CHARS = 400
"""Characters of each earlier turn shown (a small model's context is short)."""
# What a removed citation mark leaves before the punctuation that ended its sentence
# ("451 K ."); punctuation a word follows (".recover") is no ending.
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,;:!?])(?=\s|$)")


def bare_answer_notice(answer: str) -> str | None:
    """What to tell the user when ``answer`` holds no words: nothing, or only ``[n]`` marks.

    ``None`` for an answer with words. A small model sometimes answers a citing prompt
    with its source numbers alone; shown as they are, they look like a rendering fault.
    """
    if has_words(answer):
        return None
    if strip_citations(answer).split() == answer.split():  # no marks: nothing, or punctuation
        return "The model returned no answer text. Try again, or another model or mode."
    return (
        "The model answered with source numbers only, no text. The sources it pointed to "
        "are listed below."
    )


def cite_answer(
    answer: str, evidence: EvidenceBlock, grounding: GroundingCheck | None = None
) -> Generator[Event, None, list[Citation]]:
    """Add the citations a small model left out, check the answer's claims against them
    (``grounding``; ``None``: unchecked); return the citations to show.

    Sentences left uncited that clearly restate one evidence item get its number
    (:func:`~ragloom.qa.citations.attribute_uncited`; with ``grounding``, also those whose
    specifics one item holds: :func:`~ragloom.qa.grounding.attribute_by_specifics`),
    announced by
    :class:`~ragloom.events.AnswerRevised`. Then :func:`~ragloom.qa.grounding.ground_answer`
    reports each sentence's support and turns an answer none of whose claims is found into
    a decline. An answer without words is replaced by :func:`bare_answer_notice`, keeping
    the sources it pointed to (Ragloom's words: not checked).
    """
    notice = bare_answer_notice(answer)
    if notice is not None:
        logger.warning("the LLM answered without words: %r", answer)
        yield AnswerRevised(notice)
        return citations_for(answer, evidence)
    revised = attribute_uncited(answer, evidence)
    if grounding is not None:
        revised = attribute_by_specifics(
            revised, evidence, grounding.question, grounding.limits, grounding.own_words
        )
    if revised != answer:
        answer = revised
        yield AnswerRevised(answer)
    citations = citations_for(answer, evidence)
    if grounding is None:
        return citations
    return (yield from ground_answer(answer, citations, evidence, grounding))


def stream_cited_answer(
    llm: ChatLLM,
    messages: Sequence[ChatMessage],
    evidence: EvidenceBlock,
    options: GenerationOptions,
    step: str = "answer",
    label: str = ANSWER_LABEL,
    grounding: GroundingCheck | None = None,
) -> Iterator[Event]:
    """Stream an answer that cites ``evidence`` as ``[n]``, then its citations and usage.

    Uncited sentences are attributed, and the answer checked against its citations
    (``grounding``), by :func:`cite_answer`. Every mode that cites evidence ends with
    this; ``step`` names its step and ``label`` is what the user reads while it runs.
    """
    started = time.perf_counter()
    yield StepStarted(step, {"evidence": len(evidence.items)}, label=label)
    answer = ""
    result = None
    called = time.perf_counter()
    try:
        for item in llm.stream(messages, options):
            if item.text:
                answer += item.text
                yield AnswerDelta(item.text)
            if item.result is not None:
                result = item.result
    except LLMBusyError:
        raise  # the model never had the call: nothing to count
    except Exception:
        # The call broke off (the endpoint failed midway): what it took still counts, as
        # estimated, in the answer's usage (and Auto's budget), then the failure goes on.
        yield LLMCallFinished(step, _estimated_usage(llm, messages, answer, called))
        raise
    citations = yield from cite_answer(answer, evidence, grounding)
    if result is not None and result.finish_reason == "length":
        # The model was stopped mid-answer: the reader must not take it as whole.
        yield AnswerDelta(f"\n\n({CUT_AT_LENGTH})")
    yield StepFinished(
        step,
        time.perf_counter() - started,
        output={"cited": [c.number for c in citations]},
        label=label,
    )
    if result is not None:
        yield LLMCallFinished(step, result.usage)
    yield CitationsFound(citations)


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
    focus: SentenceFocus | None = Param(
        None, help="Shows only the sentences nearest the question (None: whole passages)."
    )
    check_grounding: bool = Param(
        True, help="Check the answer's specifics against the passages it cites (qa.grounding)."
    )
    history: list[ChatMessage] = Param(
        default_callback=lambda _: [],
        help="The conversation's earlier turns: the last few are shown before the question.",
    )

    def earlier_turns(self) -> str:
        """The conversation so far as the prompt shows it: the last
        :data:`MAX_HISTORY_TURNS` user and assistant turns, each cut to
        :data:`MAX_HISTORY_TURN_CHARS` characters ('' without history).

        An answer's ``[n]`` marks are left out: they numbered that answer's sources, not
        this prompt's, and a model copying one would cite the wrong passage."""
        turns = [m for m in self.history if m.role in ("user", "assistant") and m.content]
        lines = []
        for turn in turns[-MAX_HISTORY_TURNS:]:
            text = turn.content
            if turn.role == "assistant":
                text = _SPACE_BEFORE_PUNCTUATION.sub(r"\1", strip_citations(text))
            text = " ".join(text.split())
            if len(text) > MAX_HISTORY_TURN_CHARS:
                text = text[:MAX_HISTORY_TURN_CHARS].rstrip() + "…"
            lines.append(f"{'User' if turn.role == 'user' else 'Assistant'}: {text}")
        return "Earlier in this conversation:\n" + "\n".join(lines) + "\n" if lines else ""

    def evidence_budget(self, question: str) -> int:
        """Tokens left for evidence once the instructions, question and answer fit."""
        fixed = (
            self.llm.count_tokens(self.system_prompt)
            + self.llm.count_tokens(question)
            + self.llm.count_tokens(self.earlier_turns())
        )
        room = self.llm.context_window - self.max_answer_tokens - fixed - 64
        return max(0, min(self.max_evidence_tokens, room))

    def messages(self, question: str, evidence_text: str) -> list[ChatMessage]:
        """The chat messages of the prompt."""
        # Stable first: the sources, then the conversation, then the question.
        earlier = self.earlier_turns()
        user = f"Sources:\n{evidence_text}\n{earlier}Question: {question.strip()}\nAnswer:"
        return [
            ChatMessage("system", self.system_prompt),
            ChatMessage("user", user),
        ]

    def stream(self, question: str, retrieved: Sequence[RetrievedChunk]) -> Iterator[Event]:
        """Yield the answer as it is generated, then its citations and the call's usage."""
        spans = self.focus.run(question, retrieved) if self.focus is not None else None
        evidence = build_evidence(
            retrieved, self.llm.count_tokens, self.evidence_budget(question), spans
        )
        if not evidence.items:
            yield AnswerDelta(NO_EVIDENCE_ANSWER)
            yield CitationsFound([])
            return
        options = GenerationOptions(max_tokens=self.max_answer_tokens, temperature=0.0)
        grounding = GroundingCheck(question) if self.check_grounding else None
        yield from stream_cited_answer(
            self.llm,
            self.messages(question, evidence.text),
            evidence,
            options,
            grounding=grounding,
        )

    def run(self, question: str, retrieved: Sequence[RetrievedChunk]) -> list[Event]:
        """All events of :meth:`stream`, as a list."""
        return list(self.stream(question, retrieved))


def _estimated_usage(
    llm: ChatLLM, messages: Sequence[ChatMessage], written: str, called: float
) -> Usage:
    """The usage of a call that broke off before the model reported its own: the prompt
    and what it had written, counted by the model's tokenizer (or its estimate)."""
    prompt = sum(llm.count_tokens(message.content) for message in messages)
    completion = llm.count_tokens(written) if written else 0
    return Usage(prompt, prompt, completion, time.perf_counter() - called)
