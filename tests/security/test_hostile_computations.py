"""Hostile computations: a tool call written to freeze the app meets its bound.

``round(5, -10**8)`` made CPython build a hundred-million-digit integer while holding the
GIL, freezing every thread (every user, the UI, the tool's own timeout), and the timeout
was then retried. Now the calculator bounds its arguments, and every tool call runs under
the runner's limits: a sandboxed "plugin" tool stuck in C or asleep is killed at its time
limit, once for a deterministic tool, and no process is left behind. Throughout, a
heartbeat thread of this process is never paused more than 0.5 s and other calls are
served.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel

from ragloom.agents.evidence import EvidenceLedger
from ragloom.agents.react import ReActAgent
from ragloom.agents.rewoo import ReWOOAgent, ReWOOPlanner, ReWOOSolver
from ragloom.agents.tools import (
    BaseTool,
    CalculatorTool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    ToolRunner,
    warm_tools_sandbox,
)
from ragloom.events import AnswerCollector, StepFinished
from ragloom_app.testing import SAMPLE_PASSAGES, StaticRetriever
from tests.helpers.heartbeat import Heartbeat
from tests.helpers.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.security

MAX_PAUSE = 0.5


class PidFile(BaseModel):
    path: str


class GiantIntegerTool(BaseTool):
    """A plugin's tool that spins in C holding the GIL: minutes, unless killed."""

    name: ClassVar[str] = "giant"
    description: ClassVar[str] = "Computes something enormous."
    Arguments: ClassVar[type[BaseModel]] = PidFile
    deterministic: ClassVar[bool] = True
    timeout: ClassVar[float | None] = 1.0

    def run(self, arguments: BaseModel) -> ToolResult:
        assert isinstance(arguments, PidFile)
        with open(arguments.path, "a") as pids:
            pids.write(f"{os.getpid()}\n")
        return ToolResult(content=str(round(5, -(10**9))))


class SleepingTool(GiantIntegerTool):
    """A plugin's tool that never answers (a hung connection); it may answer another time."""

    name: ClassVar[str] = "sleeping"
    deterministic: ClassVar[bool] = False

    def run(self, arguments: BaseModel) -> ToolResult:
        assert isinstance(arguments, PidFile)
        with open(arguments.path, "a") as pids:
            pids.write(f"{os.getpid()}\n")
        time.sleep(3600)
        return ToolResult(content="never")


@pytest.fixture(autouse=True)
def warm_sandbox() -> None:
    # Workers started and the modules imported, as the app does at startup (and again for
    # the workers that replaced killed ones): what is timed below is the hostile call, not
    # a cold start.
    assert warm_tools_sandbox([CalculatorTool, GiantIntegerTool]) == 2


class OtherCalls:
    """Calculator calls made in a loop from another thread: other users being served."""

    def __init__(self, runner: ToolRunner) -> None:
        self.runner = runner
        self.served = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            if self.runner.call(CalculatorTool(), "6 * 7").result.content == "42":
                self.served += 1

    def __enter__(self) -> OtherCalls:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(30)


def _pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    return not os.path.exists(f"/proc/{pid}")


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("round(5, -10**8)", "round: the number of digits must be a whole number"),
        ("round(5, -10**9)", "round: the number of digits must be a whole number"),
        ("factorial(10**8)", "factorial takes a whole number from 0 to 170"),
        ("9 ** 9 ** 9", "exponents are limited to ±1000"),
        ("(10 ** 308) ** 1000", "the result is too large"),
        ("exp(10 ** 308)", "exp: the result is too large"),
        ("0 ** -1", "0 cannot be raised to a negative power"),
        ("log(5, 1)", "log: the base must be positive and not 1"),
        ("9" * 499, "a number in the expression is too large"),
    ],
)
def test_a_hostile_calculator_call_is_refused_at_once_and_nothing_pauses(
    expression: str, message: str
) -> None:
    runner = ToolRunner()  # the agents' defaults: 60 s, 2 retries
    with Heartbeat() as beat:
        call = runner.call(CalculatorTool(), expression)
    error = call.result.error
    assert error is not None and error.code == "invalid_expression"
    assert error.message.startswith(message) and not error.retryable
    assert call.attempts == 1 and call.seconds < 2
    assert beat.longest_pause < MAX_PAUSE


def test_a_plugin_tool_stuck_in_c_is_killed_at_its_limit_once_and_others_are_served(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pids"
    runner = ToolRunner()  # 2 retries: a deterministic timeout must not use them
    with Heartbeat() as beat, OtherCalls(ToolRunner()) as others:
        call = runner.call(GiantIntegerTool(), str(pid_file))
    error = call.result.error
    assert error is not None and error.code == "timeout" and not error.retryable
    assert error.message == "giant did not answer within 1 s and was stopped"
    assert call.attempts == 1 and call.seconds < 4
    assert beat.longest_pause < MAX_PAUSE
    assert others.served > 0
    (pid,) = _pids(pid_file)
    assert pid != os.getpid() and _gone(pid)


def test_a_sleeping_plugin_tool_is_killed_on_every_try_and_leaves_no_process(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pids"
    waits: list[float] = []
    with Heartbeat() as beat:
        call = ToolRunner(retries=1, sleep=waits.append).call(SleepingTool(), str(pid_file))
    error = call.result.error
    assert error is not None and error.code == "timeout" and error.retryable
    assert call.attempts == 2 and waits == [0.5]
    assert beat.longest_pause < MAX_PAUSE
    pids = _pids(pid_file)
    assert len(pids) == 2 and all(_gone(pid) for pid in pids)


def _tools(llm: ScriptedLLM, ledger: EvidenceLedger) -> tuple[ToolRegistry, dict[str, BaseTool]]:
    registry = ToolRegistry()
    registry.register(GiantIntegerTool)
    retriever = StaticRetriever(passages=SAMPLE_PASSAGES)
    context = ToolContext(llm=llm, retrievers=[retriever], ledger=ledger)
    return registry, registry.build(context)


def _finished(events: list) -> dict[str, StepFinished]:
    return {e.name: e for e in events if isinstance(e, StepFinished)}


@pytest.fixture
def pid_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pids"
    yield path
    if path.exists():
        assert all(_gone(pid) for pid in _pids(path))


def test_a_rewoo_plan_with_hostile_calls_answers_from_the_rest(pid_file: Path) -> None:
    plan = (
        "#Plan1: Find the temperature.\n#E1 = docsearch[Zorblax reactor kelvin]\n"
        "#Plan2: Round it away.\n#E2 = calculator[round(5, -10**8)]\n"
        f"#Plan3: Something enormous.\n#E3 = giant[{pid_file}]\n"
        "#Plan4: Convert it.\n#E4 = calculator[451 - 273.15]\n"
    )
    llm = ScriptedLLM(replies=[plan, "It runs at 451 kelvin, 177.85 °C [1]."])
    ledger = EvidenceLedger()
    registry, tools = _tools(llm, ledger)
    planner = ReWOOPlanner(llm=llm, tools=[registry.get(n) for n in registry.names()])
    agent = ReWOOAgent(planner=planner, solver=ReWOOSolver(llm=llm), tools=tools, ledger=ledger)
    started = time.perf_counter()
    with Heartbeat() as beat:
        events = agent.run("How hot is the reactor in Celsius?")
    seconds = time.perf_counter() - started
    steps = _finished(events)
    assert steps["E2:calculator"].error is not None
    assert steps["E2:calculator"].error.startswith(
        "invalid_expression: round: the number of digits must be a whole number"
    )
    assert steps["E3:giant"].error == ("timeout: giant did not answer within 1 s and was stopped")
    assert steps["E3:giant"].output["attempts"] == 1  # deterministic: not tried again
    assert steps["E4:calculator"].output["output"] == "177.85"
    record = AnswerCollector("rewoo").extend(events).to_dict(0.0)
    assert record["answer"] == "It runs at 451 kelvin, 177.85 °C [1]."
    assert seconds < 5 and beat.longest_pause < MAX_PAUSE


def test_a_react_run_with_hostile_calls_reads_the_errors_and_answers(pid_file: Path) -> None:
    llm = ScriptedLLM(
        replies=[
            "Thought: round it.\nAction: calculator\nAction Input: round(5, -10**8)",
            f"Thought: try the other tool.\nAction: giant\nAction Input: {pid_file}",
            "Thought: I know it.\nFinal Answer: It runs at 451 kelvin [1].",
        ],
        prefill=False,
    )
    ledger = EvidenceLedger()
    _, tools = _tools(llm, ledger)
    agent = ReActAgent(llm=llm, tools=tools, ledger=ledger)
    with Heartbeat() as beat:
        events = agent.run("How hot is the Zorblax reactor?")
    steps = _finished(events)
    assert steps["step1:calculator"].output["error"]["code"] == "invalid_expression"
    assert steps["step2:giant"].output["error"]["code"] == "timeout"
    assert steps["step2:giant"].output["attempts"] == 1
    # The model read each refusal as its observation, in words.
    assert "Observation: Error [invalid_expression]: round: the number of digits" in (
        llm.prompts[1][-1].content
    )
    assert "Observation: Error [timeout]: giant did not answer within 1 s" in (
        llm.prompts[2][-1].content
    )
    record = AnswerCollector("react").extend(events).to_dict(0.0)
    assert record["answer"] == "It runs at 451 kelvin [1]."
    assert beat.longest_pause < MAX_PAUSE
