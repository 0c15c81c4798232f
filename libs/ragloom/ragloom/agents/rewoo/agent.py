"""The ReWOO agent: plan once, run the plan's tool calls as a DAG, solve once."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator

from theflow import Param

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.rewoo.plan import Plan, PlanStep, merge_duplicate_steps
from ragloom.agents.rewoo.planner import PlanningFailed, ReWOOPlanner
from ragloom.agents.rewoo.solver import ReWOOSolver
from ragloom.agents.rewoo.worker import PlanWorker, StepOutcome
from ragloom.agents.tools.base import BaseTool
from ragloom.agents.tools.runner import call_record
from ragloom.base import BaseComponent
from ragloom.events import (
    AnswerDelta,
    CitationsFound,
    Event,
    LLMCallFinished,
    PlanCreated,
    StepFinished,
    StepStarted,
)

__all__ = ["ReWOOAgent"]


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
        yield PlanCreated(
            steps=[
                {
                    "id": f"E{step.id}",
                    "plan": step.description,
                    "tool": step.tool,
                    "input": step.tool_input,
                    "depends_on": [f"E{n}" for n in sorted(step.depends_on)],
                }
                for step in plan.steps
            ],
            raw=plan.raw,
            repaired=planning.repaired,
        )
        outcomes = yield from self._work(plan)
        yield from self.solver.stream(question, plan, outcomes, self.ledger)

    def _work(self, plan: Plan) -> Generator[Event, None, list[StepOutcome]]:
        worker = PlanWorker(self.tools, timeout=self.tool_timeout, retries=self.tool_retries)
        outcomes: list[StepOutcome] = []
        started = time.perf_counter()
        yield StepStarted("work", {"steps": len(plan.steps)})
        for kind, item in worker.run(plan):
            if kind == "started":
                assert isinstance(item, PlanStep)
                step = item
                yield StepStarted(f"E{step.id}:{step.tool}", {"input": step.tool_input})
                continue
            assert isinstance(item, StepOutcome)
            outcomes.append(item)
            name = f"E{item.step.id}:{item.step.tool}"
            record = call_record(item.tool_input, item.result, item.attempts)
            error = None
            if not item.result.ok:
                error = f"{record['error']['code']}: {record['error']['message']}"
            yield StepFinished(name, item.seconds, output=record, error=error)
            if item.result.usage is not None:
                yield LLMCallFinished(f"tool:{item.step.tool}", item.result.usage)
        failed = sum(not outcome.result.ok for outcome in outcomes)
        yield StepFinished("work", time.perf_counter() - started, output={"failed": failed})
        return outcomes

    def run(self, question: str) -> list[Event]:
        """Every event of :meth:`stream`, as a list."""
        return list(self.stream(question))
