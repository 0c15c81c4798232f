"""The ReWOO solver: one LLM call answers from the plan and all its evidence, citing it.

Documents found by ``docsearch`` are shown once each as numbered sources (the request's
:class:`~ragloom.agents.evidence.EvidenceLedger`), so the answer cites them as ``[n]``
like FullQA's; other steps' results are shown after their step, trimmed. Everything is
budgeted so that the prompt and the answer fit the model's context.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from theflow import Param

from ragloom.agents.budget import trim_to_tokens
from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.rewoo.plan import Plan
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

    def _results(self, plan: Plan, outcomes: Sequence[StepOutcome], ledger: EvidenceLedger) -> str:
        """The steps that found no document, each with its result (trimmed).

        Documents are numbered sources already; repeating the plan around them measurably
        confused the small default model, so only the other results are listed. A step is
        shown as the plan wrote it (``calculator[#E1 * 2]``): with earlier evidence pasted
        into its input, one step repeated a whole passage in the prompt.
        """
        lines = []
        for outcome in sorted(outcomes, key=lambda o: o.step.id):
            if outcome.result.ok and outcome.result.sources:
                ledger.add(outcome.result.sources)
                continue
            step = outcome.step
            shown = trim_to_tokens(
                " ".join(outcome.evidence.split()), self.max_result_tokens, self.llm.count_tokens
            )
            about = f" ({step.description})" if step.description else ""
            lines.append(f"#E{step.id}{about} = {step.tool}[{step.tool_input}] -> {shown}")
        return "\n".join(lines)

    def stream(
        self,
        question: str,
        plan: Plan,
        outcomes: Sequence[StepOutcome],
        ledger: EvidenceLedger,
    ) -> Iterator[Event]:
        """Stream the answer, its citations and the call's usage."""
        results = self._results(plan, outcomes, ledger)
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
