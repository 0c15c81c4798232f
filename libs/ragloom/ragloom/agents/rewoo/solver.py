"""The ReWOO solver: one LLM call answers from the plan and all its evidence, citing it.

Documents found by ``docsearch`` are shown once each as numbered sources (the request's
:class:`~ragloom.agents.evidence.EvidenceLedger`), so the answer cites them as ``[n]``
like FullQA's; other steps' results are shown after their step, trimmed. A step that
failed or was dropped before running gives no evidence: the prompt shows no error text of
it, only one short line in a note of the steps that gave nothing, so that a padding step
cannot steer the answer. Everything is budgeted so that the prompt and the answer fit the
model's context.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from theflow import Param

from ragloom.agents.budget import trim_to_tokens
from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.rewoo.plan import Plan, PlanStep
from ragloom.agents.rewoo.screen import DroppedStep
from ragloom.agents.rewoo.worker import StepOutcome
from ragloom.base import BaseComponent
from ragloom.events import AnswerDelta, CitationsFound, Event
from ragloom.llms.base import ChatLLM, ChatMessage, GenerationOptions
from ragloom.qa.answer import ANSWER_INSTRUCTIONS, NO_EVIDENCE_ANSWER, stream_cited_answer
from ragloom.qa.grounding import GroundingCheck

__all__ = ["NOT_USED_HEADING", "SOLVER_SYSTEM_PROMPT", "ReWOOSolver"]

NOT_USED_HEADING = "Steps that gave nothing (answer from the rest):"
"""The heading of the note of failed and dropped steps in the solver's prompt."""

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
    max_note_tokens: int = Param(
        40, help="Most tokens of the note line of a step that failed or was dropped."
    )
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

    def _not_used(self, outcomes: Sequence[StepOutcome], dropped: Sequence[DroppedStep]) -> str:
        """One short line per step that gave nothing: dropped (with why) or failed (with
        its error code, not its message: the trace has that)."""
        lines = {item.step.id: f"{_call(item.step)}: not run, {item.reason}" for item in dropped}
        for outcome in outcomes:
            error = outcome.result.error
            if error is None:
                continue
            # A skipped step's message is ours and short ("it uses #E2, which failed").
            why = (
                f"not run, {error.message}" if error.code == "skipped" else f"failed ({error.code})"
            )
            lines[outcome.step.id] = f"{_call(outcome.step)}: {why}"
        return "\n".join(self._trim(lines[n], self.max_note_tokens) for n in sorted(lines))

    def stream(
        self,
        question: str,
        plan: Plan,
        outcomes: Sequence[StepOutcome],
        ledger: EvidenceLedger,
        dropped: Sequence[DroppedStep] = (),
    ) -> Iterator[Event]:
        """Stream the answer, its citations and the call's usage.

        ``dropped``: the plan's steps not run (:func:`~ragloom.agents.rewoo.screen.screen_plan`).
        """
        results = self._results(outcomes, ledger)
        if not results and not len(ledger):
            yield AnswerDelta(NO_EVIDENCE_ANSWER)
            yield CitationsFound([])
            return
        not_used = self._not_used(outcomes, dropped)
        fixed = self.llm.count_tokens(self.system_prompt + results + not_used + question)
        room = self.llm.context_window - self.max_answer_tokens - fixed - 96
        budget = max(0, min(self.max_source_tokens, room))
        evidence = ledger.block(self.llm.count_tokens, budget)
        other = f"Other results:\n{results}\n" if results else ""
        if not_used:
            other += f"{NOT_USED_HEADING}\n{not_used}\n"
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
