"""The ReWOO agent: plan once, drop the steps that cannot work, run the rest as a DAG,
solve once."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator

from theflow import Param

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.rewoo.plan import Plan, PlanStep, merge_duplicate_steps
from ragloom.agents.rewoo.planner import PlanningFailed, ReWOOPlanner
from ragloom.agents.rewoo.screen import ScreenedPlan, screen_plan
from ragloom.agents.rewoo.solver import ReWOOSolver
from ragloom.agents.rewoo.worker import PlanWorker, StepOutcome
from ragloom.agents.tools.base import BaseTool
from ragloom.agents.tools.runner import call_record, shown_input
from ragloom.base import BaseComponent
from ragloom.events import (
    AnswerDelta,
    CitationsFound,
    Event,
    LLMCallFinished,
    PlanCreated,
    PlanItem,
    PlanItemStatus,
    StepFinished,
    StepStarted,
)

__all__ = ["ReWOOAgent"]

WORK_LABEL = "Running the plan"


def _step_name(step: PlanStep) -> str:
    return f"E{step.id}:{step.tool}"


def _step_label(step: PlanStep) -> str:
    return f"Running #E{step.id} ({step.tool})"


def _item(step: PlanStep, status: PlanItemStatus = "planned", reason: str = "") -> PlanItem:
    return PlanItem(
        id=f"E{step.id}",
        text=step.description,
        tool=step.tool,
        input=step.tool_input,
        depends_on=tuple(f"E{n}" for n in sorted(step.depends_on)),
        status=status,
        reason=reason,
    )


def _plan_items(plan: Plan, screened: ScreenedPlan) -> list[PlanItem]:
    """Every planned step in order, the dropped ones with why, then the search added."""
    why = {item.step.id: item.reason for item in screened.dropped}
    items = [
        _item(step, "dropped", why[step.id]) if step.id in why else _item(step)
        for step in plan.steps
    ]
    items.extend(_item(item.step, "added", item.reason) for item in screened.repaired)
    if screened.added is not None:
        items.append(_item(screened.added, "added", "the steps left do not search the documents"))
    return items


class ReWOOAgent(BaseComponent):
    """Planner, worker and solver over one request's tools (see :mod:`ragloom.agents.rewoo`)."""

    planner: ReWOOPlanner = Param(help="Writes the plan.")
    solver: ReWOOSolver = Param(help="Answers from the plan's evidence.")
    tools: dict[str, BaseTool] = Param(help="This request's tools, by name.")
    ledger: EvidenceLedger = Param(
        default_callback=lambda _: EvidenceLedger(), help="Numbers the documents found."
    )
    tool_timeout: float = Param(
        60.0, help="Seconds a tool call may take (a tool's own limit may be shorter)."
    )
    tool_retries: int = Param(2, help="Retries of a call whose error is worth retrying.")
    deadline: float | None = Param(
        None, help="A time.monotonic() time past which no tool call runs (the answer's)."
    )
    fallback_search: str | None = Param(
        "docsearch",
        help="The tool that searches for the question when the dropped steps leave no "
        "search of it (None: none is added).",
    )

    def stream(self, question: str) -> Iterator[Event]:
        """Plan, run, solve; yield every step's events."""
        try:
            planning = yield from self.planner.stream(question)
        except PlanningFailed as failed:
            yield AnswerDelta(
                "I could not make a plan that runs, even after one repair: "
                f"{failed.error}.\n\nThe planner wrote:\n\n```\n{failed.error.raw.strip()}\n```"
            )
            yield CitationsFound([])
            return
        plan = merge_duplicate_steps(planning.plan)
        screened = screen_plan(plan, self.tools, question, self.fallback_search)
        yield PlanCreated(
            steps=_plan_items(plan, screened), raw=plan.raw, repaired=planning.repaired
        )
        outcomes = yield from self._work(screened.plan)
        yield from self.solver.stream(question, screened.plan, outcomes, self.ledger)

    def _work(self, plan: Plan) -> Generator[Event, None, list[StepOutcome]]:
        worker = PlanWorker(
            self.tools,
            timeout=self.tool_timeout,
            retries=self.tool_retries,
            deadline=self.deadline,
        )
        outcomes: list[StepOutcome] = []
        started = time.perf_counter()
        yield StepStarted("work", {"steps": len(plan.steps)}, label=WORK_LABEL)
        for kind, item in worker.run(plan):
            if kind == "started":
                assert isinstance(item, PlanStep)
                yield StepStarted(
                    _step_name(item),
                    {"input": shown_input(item.tool_input)},
                    label=_step_label(item),
                )
                continue
            assert isinstance(item, StepOutcome)
            outcomes.append(item)
            record = call_record(item.tool_input, item.result, item.attempts)
            error = None
            if not item.result.ok:
                error = f"{record['error']['code']}: {record['error']['message']}"
            yield StepFinished(
                _step_name(item.step),
                item.seconds,
                output=record,
                error=error,
                label=_step_label(item.step),
            )
            if item.result.usage is not None:
                yield LLMCallFinished(f"tool:{item.step.tool}", item.result.usage)
        failed = sum(not outcome.result.ok for outcome in outcomes)
        yield StepFinished(
            "work", time.perf_counter() - started, output={"failed": failed}, label=WORK_LABEL
        )
        return outcomes

    def run(self, question: str) -> list[Event]:
        """Every event of :meth:`stream`, as a list."""
        return list(self.stream(question))
