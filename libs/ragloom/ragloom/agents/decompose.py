"""Question decomposition: split the question, answer each part from the documents, combine.

One call splits the question into at most ``max_questions`` simpler ones (constrained by
a grammar where the LLM takes one); each is answered from its own retrieval in one call,
citing request-wide source numbers; a last call writes the answer from the sub-answers
and the sources, citing them like FullQA.
"""

from __future__ import annotations

import re
import time
from collections.abc import Generator, Iterator

from theflow import Param

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.rewoo.solver import SOLVER_SYSTEM_PROMPT
from ragloom.base import BaseComponent
from ragloom.events import Event, LLMCallFinished, PlanCreated, PlanItem, StepFinished, StepStarted
from ragloom.llms.base import ChatLLM, ChatMessage, GenerationOptions
from ragloom.qa.answer import stream_cited_answer
from ragloom.qa.citations import has_words
from ragloom.qa.grounding import GroundingCheck
from ragloom.retrieval import Retriever, SentenceFocus, retrieve_from_all

__all__ = ["DecompositionAgent", "parse_subquestions"]

SPLIT_PROMPT = (
    "Split the user's question into at most {n} simpler questions that can each be answered "
    "by one search of the documents. Write one per line, numbered 1., 2., ... A question "
    "that is already simple is written once, as it is."
)
SUBANSWER_PROMPT = (
    "Answer the question in one sentence using only the numbered sources, ending with the "
    "number of the source you used in square brackets, like [2]. If they do not say, "
    "answer: not found."
)
SPLIT_LABEL = "Splitting the question"
_SUBANSWER_TOKENS = 120  # a sub-answer is one short sentence or two
_NUMBERED = re.compile(r"^\s*(?:\d+\s*[.):]|[-*])\s*(?P<text>.+?)\s*$")


def parse_subquestions(text: str, limit: int) -> list[str]:
    """The numbered (or bulleted) questions in ``text``, each once, at most ``limit``."""
    found: list[str] = []
    for line in text.splitlines():
        match = _NUMBERED.match(line)
        question = (match["text"] if match else "").strip()
        if "?" in question:  # what follows the question mark is not part of it
            question = question[: question.index("?") + 1]
        if question and question.lower() not in (q.lower() for q in found):
            found.append(question)
    return found[:limit]


class DecompositionAgent(BaseComponent):
    """Splits, answers the parts from retrieval, combines (see the module docstring)."""

    llm: ChatLLM = Param(help="The chat model.")
    retrievers: list[Retriever] = Param(default_callback=lambda _: [], help="Retrievers.")
    ledger: EvidenceLedger = Param(
        default_callback=lambda _: EvidenceLedger(), help="Numbers the documents found."
    )
    max_questions: int = Param(3, help="Most sub-questions.")
    top_k: int = Param(2, help="Chunks retrieved per sub-question.")
    max_answer_tokens: int = Param(320, help="Most tokens of the final answer.")
    max_source_tokens: int = Param(2000, help="Most tokens of numbered sources in a prompt.")
    focus: SentenceFocus | None = Param(
        None, help="Shows only the sentences nearest each sub-question (None: whole passages)."
    )
    check_grounding: bool = Param(
        True, help="Check the answer's specifics against the passages it cites (qa.grounding)."
    )

    def _split_options(self) -> GenerationOptions:
        grammar = None
        if self.llm.supports_grammar:
            # "1. " line ("2. " line (...)?)?: numbered lines, at most max_questions.
            chain = f'"{self.max_questions}. " line'
            for n in range(self.max_questions - 1, 0, -1):
                chain = f'"{n}. " line ({chain})?'
            # Each line is one question, ending at its "?": a small model otherwise goes
            # on to answer it from memory on the same line.
            grammar = f'root ::= {chain}\nline ::= [^\\n? ] [^\\n?]{{4,200}} "?\\n"'
        return GenerationOptions(max_tokens=80 * self.max_questions, grammar=grammar)

    def _split(self, question: str) -> Generator[Event, None, list[str]]:
        started = time.perf_counter()
        yield StepStarted(
            "split", {"question": question, "max": self.max_questions}, label=SPLIT_LABEL
        )
        messages = [
            ChatMessage("system", SPLIT_PROMPT.format(n=self.max_questions)),
            ChatMessage("user", question.strip()),
        ]
        result = self.llm.run(messages, self._split_options())
        yield LLMCallFinished("split", result.usage)
        parts = parse_subquestions(result.text, self.max_questions) or [question.strip()]
        yield StepFinished(
            "split",
            time.perf_counter() - started,
            output={"questions": parts},
            label=SPLIT_LABEL,
        )
        yield PlanCreated(
            steps=[PlanItem(f"Q{n}", q) for n, q in enumerate(parts, 1)], raw=result.text
        )
        return parts

    def _answer_part(self, number: int, part: str) -> Generator[Event, None, str]:
        started = time.perf_counter()
        name, label = f"Q{number}", f"Answering sub-question {number}"
        yield StepStarted(name, {"question": part}, label=label)
        hits = retrieve_from_all(self.retrievers, part, self.top_k)
        spans = self.focus.run(part, hits) if self.focus is not None else None
        numbers = self.ledger.add(hits, spans)
        if not numbers:
            yield StepFinished(
                name, time.perf_counter() - started, output={"answer": None}, label=label
            )
            return "not found"
        # As the final answer's: the sources fit what the context leaves (a small model's
        # 2,048 tokens held fewer than max_source_tokens, and the call failed).
        fixed = self.llm.count_tokens(SUBANSWER_PROMPT + part)
        room = self.llm.context_window - _SUBANSWER_TOKENS - fixed - 64
        budget = max(0, min(self.max_source_tokens, room))
        block = self.ledger.block(self.llm.count_tokens, budget, numbers)
        if not block.text:  # no room for any: asked bare, the model would answer by heart
            yield StepFinished(
                name, time.perf_counter() - started, output={"answer": None}, label=label
            )
            return "not found"
        messages = [
            ChatMessage("system", SUBANSWER_PROMPT),
            ChatMessage("user", f"Sources:\n{block.text}\nQuestion: {part}\nAnswer:"),
        ]
        result = self.llm.run(messages, GenerationOptions(max_tokens=_SUBANSWER_TOKENS))
        yield LLMCallFinished("subanswer", result.usage)
        answer = " ".join(result.text.split())
        if not has_words(answer):  # nothing, or only "[1]"
            answer = "not found"
        yield StepFinished(
            name,
            time.perf_counter() - started,
            output={"answer": answer, "sources": numbers},
            label=label,
        )
        return answer

    def stream(self, question: str) -> Iterator[Event]:
        """Split, answer each part, then stream the combined, cited answer."""
        parts = yield from self._split(question)
        notes: list[str] = []
        for number, part in enumerate(parts, 1):
            answer = yield from self._answer_part(number, part)
            notes.append(f"- {part} {answer}")
        notes_text = "\n".join(notes)
        fixed = self.llm.count_tokens(SOLVER_SYSTEM_PROMPT + notes_text + question)
        room = self.llm.context_window - self.max_answer_tokens - fixed - 96
        evidence = self.ledger.block(
            self.llm.count_tokens, max(0, min(self.max_source_tokens, room))
        )
        user = (
            f"Sources:\n{evidence.text or '(none)'}\nFindings so far:\n{notes_text}\n"
            f"Question: {question.strip()}\nAnswer:"
        )
        messages = [ChatMessage("system", SOLVER_SYSTEM_PROMPT), ChatMessage("user", user)]
        options = GenerationOptions(max_tokens=self.max_answer_tokens)
        # The sub-answers are the model's own words, not sources: only the question counts.
        check = GroundingCheck(question) if self.check_grounding else None
        yield from stream_cited_answer(self.llm, messages, evidence, options, grounding=check)

    def run(self, question: str) -> list[Event]:
        """Every event of :meth:`stream`, as a list."""
        return list(self.stream(question))
