"""Run a validated ReWOO plan as a DAG: level by level, independent steps in parallel.

Each call has a timeout and retries with exponential backoff when its error says it is
worth retrying. A failed step becomes explicit error evidence (``Error [code]: ...``)
that later steps and the solver see; it never stops the other steps.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from ragloom.agents.rewoo.plan import Plan, PlanStep, plan_levels, substitute_evidence
from ragloom.agents.tools.base import BaseTool, ToolResult

__all__ = ["PlanWorker", "StepOutcome"]

logger = logging.getLogger(__name__)


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
        max_parallel: int = 4,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.tools = dict(tools)
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_parallel = max_parallel
        self._sleep = sleep

    def _call_once(self, pool: ThreadPoolExecutor, tool: BaseTool, tool_input: str) -> ToolResult:
        future: Future[ToolResult] = pool.submit(tool.invoke, tool_input)
        try:
            return future.result(timeout=self.timeout)
        except FutureTimeout:
            # The thread cannot be stopped; it finishes in the background and is ignored.
            return ToolResult.failure(
                "timeout", f"{tool.name} did not answer within {self.timeout:g} s", retryable=True
            )

    def _call(self, step: PlanStep, tool_input: str) -> StepOutcome:
        started = time.perf_counter()
        tool = self.tools.get(step.tool)
        if tool is None:
            result = ToolResult.failure("unknown_tool", f"no tool named {step.tool!r}")
            return StepOutcome(step, tool_input, result, 0.0, 0)
        attempts = 0
        # One thread per attempt, and no waiting for them at the end: a call that hangs
        # must hold up neither its retry nor the plan (its thread ends on its own).
        pool = ThreadPoolExecutor(max_workers=self.retries + 1)
        try:
            while True:
                attempts += 1
                result = self._call_once(pool, tool, tool_input)
                if result.ok or not result.error.retryable or attempts > self.retries:
                    break
                delay = self.backoff * 2 ** (attempts - 1)
                logger.info(
                    "#E%d %s failed (%s); retry in %.2f s",
                    step.id,
                    tool.name,
                    result.error.code,
                    delay,
                )
                self._sleep(delay)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return StepOutcome(step, tool_input, result, time.perf_counter() - started, attempts)

    def run(self, plan: Plan) -> Iterator[tuple[str, StepOutcome | PlanStep]]:
        """Yield ``("started", step)`` and ``("finished", outcome)`` as steps run."""
        evidence: dict[int, str] = {}
        for level in plan_levels(plan):
            inputs = {s.id: substitute_evidence(s.tool_input, evidence) for s in level}
            for step in level:
                yield "started", step
            with ThreadPoolExecutor(max_workers=min(self.max_parallel, len(level))) as pool:
                futures = {s.id: pool.submit(self._call, s, inputs[s.id]) for s in level}
                for step in level:
                    outcome = futures[step.id].result()
                    evidence[step.id] = outcome.evidence
                    yield "finished", outcome
