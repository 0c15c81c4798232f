"""The ReWOO solver: one LLM call answers from the plan and all its evidence, citing it.

Documents found by ``docsearch`` are shown once each as numbered sources (the request's
:class:`~ragloom.agents.evidence.EvidenceLedger`), so the answer cites them as ``[n]``
like FullQA's; other steps' results are shown after their step, trimmed. A step that
failed or was dropped before running gives no evidence and is not shown at all (the trace
shows it and why), so that the solver answers as if it had never been planned: a padding
step cannot steer the answer. Everything is budgeted so that the prompt and the answer
fit the model's context.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from theflow import Param

from ragloom.agents.budget import trim_to_tokens
from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.rewoo.plan import Plan, PlanStep
from ragloom.agents.rewoo.worker import StepOutcome
from ragloom.base import BaseComponent
from ragloom.events import AnswerDelta, CitationsFound, Event
from ragloom.llms.base import ChatLLM, ChatMessage, GenerationOptions
from ragloom.qa.answer import ANSWER_INSTRUCTIONS, NO_EVIDENCE_ANSWER, stream_cited_answer
from ragloom.qa.grounding import GroundingCheck

__all__ = ["SOLVER_SYSTEM_PROMPT", "ReWOOSolver"]

SOLVER_SYSTEM_PROMPT = (
    "You answer a question using only the numbered sources and results given. "
    f"{ANSWER_INSTRUCTIONS}"
)


class ReWOOSolver(BaseComponent):
    """Answers from a run plan (see the module docstring)."""

    llm: ChatLLM = Param(help="The solver's chat model.")
    system_prompt: str = Param(SOLVER_SYSTEM_PROMPT, help="Instructions for the solver.")
    max_answer_tokens: int = Param(320, help="Most tokens the answer may take.")
    max_result_tokens: int = Param(150, help="Most tokens shown of a non-document result.")
    max_source_tokens: int = Param(2000, help="Most tokens of numbered sources.")
    check_grounding: bool = Param(
        True,
        help="Check the answer's specifics against the passages it cites and the other "
        "steps' results (qa.grounding).",
    )

    def _trim(self, text: str, max_tokens: int) -> str:
        return trim_to_tokens(" ".join(text.split()), max_tokens, self.llm.count_tokens)

    def _results(self, outcomes: Sequence[StepOutcome], ledger: EvidenceLedger) -> str:
        """The steps that succeeded without finding a document, each with its result.

        Documents are numbered sources already; repeating the plan around them measurably
        confused the small default model, so only the other results are listed. A step is
        shown as the plan wrote it (``calculator[#E1 * 2]``): with earlier evidence pasted
        into its input, one step repeated a whole passage in the prompt.
        """
        lines = []
        for outcome in sorted(outcomes, key=lambda o: o.step.id):
            if not outcome.result.ok:
                continue
            if outcome.result.sources:
                ledger.add(outcome.result.sources)
                continue
            shown = self._trim(outcome.evidence, self.max_result_tokens)
            lines.append(f"{_call(outcome.step, about=True)} -> {shown}")
        return "\n".join(lines)

    def stream(
        self,
        question: str,
        plan: Plan,
        outcomes: Sequence[StepOutcome],
        ledger: EvidenceLedger,
    ) -> Iterator[Event]:
        """Stream the answer, its citations and the call's usage."""
        results = self._results(outcomes, ledger)
        if not results and not len(ledger):
            yield AnswerDelta(NO_EVIDENCE_ANSWER)
            yield CitationsFound([])
            return
        fixed = self.llm.count_tokens(self.system_prompt + results + question)
        room = self.llm.context_window - self.max_answer_tokens - fixed - 96
        budget = max(0, min(self.max_source_tokens, room))
        evidence = ledger.block(self.llm.count_tokens, budget)
        other = f"Other results:\n{results}\n" if results else ""
        user = (
            f"Sources:\n{evidence.text or '(none)'}\n{other}Question: {question.strip()}\nAnswer:"
        )
        messages = [ChatMessage("system", self.system_prompt), ChatMessage("user", user)]
        options = GenerationOptions(max_tokens=self.max_answer_tokens, temperature=0.0)
        # A calculator's result is no passage, but a number it computed is not invented.
        check = GroundingCheck(question, (results,)) if self.check_grounding else None
        yield from stream_cited_answer(
            self.llm, messages, evidence, options, step="solve", grounding=check
        )


def _call(step: PlanStep, *, about: bool = False) -> str:
    """``#E2 = calculator[#E1 * 2]`` as the plan wrote it; ``about`` adds its description."""
    described = f" ({step.description})" if about and step.description else ""
    return f"#E{step.id}{described} = {step.tool}[{step.tool_input}]"
