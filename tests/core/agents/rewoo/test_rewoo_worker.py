"""The ReWOO worker: parallel levels, substitution, timeouts, retries, input checks, skips."""

import threading
import time
from typing import ClassVar

from pydantic import BaseModel

from ragloom.agents.rewoo import parse_plan
from ragloom.agents.rewoo.worker import PlanWorker, StepOutcome
from ragloom.agents.tools import CalculatorTool, ToolError, ToolResult
from ragloom.agents.tools.base import BaseTool
from tests.helpers.patient_tool import PatientTool


class EchoTool(BaseTool):
    """Returns its input; waits at a barrier so a test can prove calls overlap."""

    class Arguments(BaseModel):
        text: str

    name: ClassVar[str] = "echo"
    description: ClassVar[str] = "echo"
    sandboxed: ClassVar[bool] = False  # the test reads what it saw: it runs in this process

    def __init__(self, barrier: threading.Barrier | None = None) -> None:
        self.barrier = barrier
        self.seen: list[str] = []

    def run(self, arguments: BaseModel) -> ToolResult:
        self.seen.append(arguments.text)
        if self.barrier is not None:
            self.barrier.wait(timeout=5)  # raises if the calls were not concurrent
        return ToolResult(content=f"<{arguments.text}>")


class FlakyTool(BaseTool):
    """Fails with a retryable error a given number of times, then answers."""

    class Arguments(BaseModel):
        text: str

    name: ClassVar[str] = "flaky"
    description: ClassVar[str] = "flaky"
    sandboxed: ClassVar[bool] = False  # counts its calls across retries, in this process

    def __init__(self, failures: int, hang: threading.Event | None = None) -> None:
        self.failures = failures
        self.calls = 0
        self.hang = hang

    def run(self, arguments: BaseModel) -> ToolResult:
        self.calls += 1
        if self.hang is not None:
            self.hang.wait(10)
        if self.calls <= self.failures:
            return ToolResult.failure("busy", "try later", retryable=True)
        return ToolResult(content="ok")


def _finished(events: list) -> dict[int, StepOutcome]:
    return {o.step.id: o for kind, o in events if kind == "finished"}


def test_independent_steps_run_at_the_same_time_and_evidence_flows_on() -> None:
    echo = EchoTool(barrier=threading.Barrier(3))
    plan = parse_plan("#E1 = echo[a]\n#E2 = echo[b]\n#E3 = echo[c]\n#E4 = calculator[2 * 21]")
    worker = PlanWorker({"echo": echo, "calculator": CalculatorTool()})
    outcomes = _finished(list(worker.run(plan)))
    assert [outcomes[n].evidence for n in (1, 2, 3, 4)] == ["<a>", "<b>", "<c>", "42"]


def test_later_steps_see_earlier_evidence() -> None:
    echo = EchoTool()
    plan = parse_plan("#E1 = calculator[6*7]\n#E2 = echo[answer is #E1]")
    outcomes = _finished(list(PlanWorker({"echo": echo, "calculator": CalculatorTool()}).run(plan)))
    assert outcomes[2].tool_input == "answer is 42"
    assert outcomes[2].evidence == "<answer is 42>"


def test_retryable_errors_are_retried_with_backoff() -> None:
    delays: list[float] = []
    flaky = FlakyTool(failures=2)
    worker = PlanWorker({"flaky": flaky}, retries=2, backoff=0.1, sleep=delays.append)
    (outcome,) = _finished(list(worker.run(parse_plan("#E1 = flaky[x]")))).values()
    assert outcome.result.ok and outcome.attempts == 3
    assert delays == [0.1, 0.2]


def test_a_hanging_tool_times_out_and_the_rest_still_runs() -> None:
    release = threading.Event()
    hanging = FlakyTool(failures=0, hang=release)
    worker = PlanWorker({"flaky": hanging, "calculator": CalculatorTool()}, timeout=0.2, retries=0)
    plan = parse_plan("#E1 = flaky[x]\n#E2 = calculator[1+1]\n#E3 = calculator[#E2 * 2]")
    try:
        started = time.perf_counter()
        outcomes = _finished(list(worker.run(plan)))
        waited = time.perf_counter() - started
    finally:
        release.set()
    assert waited < 5, "the plan waited for the hanging call instead of timing out"
    # It ignored its cancellation, so its thread still runs: trying again would add another.
    assert outcomes[1].evidence == (
        "Error [timeout]: flaky did not answer within 0.2 s and was cancelled"
    )
    assert outcomes[3].evidence == "4"


def test_a_step_using_a_failed_step_is_skipped_not_fed_the_error() -> None:
    echo = EchoTool()
    plan = parse_plan("#E1 = calculator[1/0]\n#E2 = echo[got #E1]\n#E3 = echo[fine]")
    outcomes = _finished(list(PlanWorker({"echo": echo, "calculator": CalculatorTool()}).run(plan)))
    assert outcomes[1].result.error.code == "invalid_expression"
    assert outcomes[2].result.error == ToolError("skipped", "it uses #E1, which failed")
    assert outcomes[2].attempts == 0 and outcomes[3].result.content == "<fine>"
    assert echo.seen == ["fine"]


def test_a_filled_in_input_the_tool_cannot_take_is_refused_without_a_call() -> None:
    echo = EchoTool()
    plan = parse_plan("#E1 = echo[the answer]\n#E2 = calculator[#E1 * 2]")
    outcomes = _finished(list(PlanWorker({"echo": echo, "calculator": CalculatorTool()}).run(plan)))
    error = outcomes[2].result.error
    assert error is not None and error.code == "invalid_input" and outcomes[2].attempts == 0
    assert error.message == (
        "calculator cannot take this input: not an arithmetic expression: invalid syntax"
    )


def test_a_worker_closed_mid_level_leaves_at_once_and_cancels_the_calls_under_way() -> None:
    """The answer stopped (its deadline, or the user): closing the plan's run once waited
    for every step of the level to end, while they went on working for nobody."""
    tool = PatientTool()
    plan = parse_plan("#E1 = patient[now]\n#E2 = patient[slow]\n#E3 = patient[slower]")
    run = PlanWorker({"patient": tool}, timeout=60, max_parallel=3).run(plan)
    assert [kind for kind, _ in (next(run), next(run), next(run))] == ["started"] * 3
    kind, outcome = next(run)
    assert kind == "finished" and isinstance(outcome, StepOutcome) and outcome.step.id == 1
    # Both slow calls at work (on a loaded machine their threads reach the tool late).
    deadline = time.monotonic() + 10
    while len(tool.started) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sorted(tool.started) == ["slow", "slower"]
    started = time.monotonic()
    run.close()
    assert time.monotonic() - started < 1.0
    deadline = time.monotonic() + 5
    while sorted(tool.cancelled) != sorted(tool.started) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sorted(tool.cancelled) == ["slow", "slower"]
