"""Run a validated ReWOO plan as a DAG: level by level, independent steps in parallel.

Each call has a timeout and retries with exponential backoff when its error says it is
worth retrying (:class:`~ragloom.agents.tools.runner.ToolRunner`). Its input, once the
evidence of earlier steps is filled in, must pass its tool's ``check_input``; one that
does not fails as ``invalid_input`` without calling the tool. A failed step never stops
the other steps, but a step that uses it is ``skipped``: its input would hold an error
message instead of evidence.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ragloom.agents.rewoo.plan import Plan, PlanStep, plan_levels, substitute_evidence
from ragloom.agents.rewoo.screen import input_problem
from ragloom.agents.tools.base import BaseTool, ToolResult
from ragloom.agents.tools.runner import ToolRunner

__all__ = ["PlanWorker", "StepOutcome"]


@dataclass(frozen=True)
class StepOutcome:
    """What one step did: its input after substitution, its result, time and attempts."""

    step: PlanStep
    tool_input: str
    result: ToolResult
    seconds: float
    attempts: int

    @property
    def evidence(self) -> str:
        """The text later steps and the solver see for ``#E{id}``."""
        return self.result.as_observation()


class PlanWorker:
    """Executes plans with the given tools (see the module docstring)."""

    def __init__(
        self,
        tools: Mapping[str, BaseTool],
        *,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 0.5,
        max_parallel: int = 16,
        sleep: Callable[[float], None] = time.sleep,
        deadline: float | None = None,
    ) -> None:
        self.tools = dict(tools)
        self.runner = ToolRunner(
            timeout=timeout, retries=retries, backoff=backoff, sleep=sleep, deadline=deadline
        )
        self.max_parallel = max_parallel

    def _refusal(
        self, step: PlanStep, tool_input: str, failed: frozenset[int]
    ) -> ToolResult | None:
        """The failure of a step that is not called, or ``None`` when it may be."""
        tool = self.tools.get(step.tool)
        if tool is None:
            return ToolResult.failure("unknown_tool", f"no tool named {step.tool!r}")
        if unmet := sorted(step.depends_on & failed):
            uses = ", ".join(f"#E{n}" for n in unmet)
            return ToolResult.failure("skipped", f"it uses {uses}, which failed")
        if len(tool_input) > self.runner.limits.input_chars:
            return None  # the runner refuses it, naming the limit
        if problem := input_problem(tool, tool_input):
            return ToolResult.failure(
                "invalid_input", f"{tool.name} cannot take this input: {problem}"
            )
        return None

    def _call(self, step: PlanStep, tool_input: str, failed: frozenset[int]) -> StepOutcome:
        refused = self._refusal(step, tool_input, failed)
        if refused is not None:
            return StepOutcome(step, tool_input, refused, 0.0, 0)
        call = self.runner.call(self.tools[step.tool], tool_input)
        return StepOutcome(step, tool_input, call.result, call.seconds, call.attempts)

    def run(self, plan: Plan) -> Iterator[tuple[str, StepOutcome | PlanStep]]:
        """Yield ``("started", step)`` and ``("finished", outcome)`` as steps run.

        Closed before it ends (the answer stopped), it leaves at once: the steps not yet
        run never start, and those under way in threads are cancelled."""
        evidence: dict[int, str] = {}
        failed: set[int] = set()
        for level in plan_levels(plan):
            inputs = {s.id: substitute_evidence(s.tool_input, evidence) for s in level}
            for step in level:
                yield "started", step
            before = frozenset(failed)  # a level's steps use only earlier levels
            pool = ThreadPoolExecutor(max_workers=min(self.max_parallel, len(level)))
            try:
                futures = {s.id: pool.submit(self._call, s, inputs[s.id], before) for s in level}
                for step in level:
                    outcome = futures[step.id].result()
                    evidence[step.id] = outcome.evidence
                    if not outcome.result.ok:
                        failed.add(step.id)
                    yield "finished", outcome
            except GeneratorExit:
                self.runner.stop()
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            pool.shutdown()
