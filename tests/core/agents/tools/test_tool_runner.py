"""The tool runner: sandboxed calls, cancellable in-process calls, bounded inputs and results."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel

from ragloom.agents.tools import (
    BaseTool,
    CalculatorTool,
    DocSearchTool,
    ToolLimits,
    ToolResult,
    ToolRunner,
    raise_if_cancelled,
    warm_tools_sandbox,
)
from ragloom.sandbox import Sandbox, SandboxLimits, SandboxTimeout
from ragloom.schema import Chunk, RetrievedChunk


class Text(BaseModel):
    text: str


class WhereTool(BaseTool):
    """Says which process ran it."""

    name: ClassVar[str] = "where"
    description: ClassVar[str] = "The process id."
    Arguments: ClassVar[type[BaseModel]] = Text

    def run(self, arguments: BaseModel) -> ToolResult:
        return ToolResult(content=str(os.getpid()))


class SleepTool(WhereTool):
    """Sleeps far past any time limit (a hung remote call)."""

    name: ClassVar[str] = "sleep"
    timeout: ClassVar[float | None] = 0.5

    def run(self, arguments: BaseModel) -> ToolResult:
        time.sleep(60)
        return ToolResult(content="too late")


class StampedSleepTool(SleepTool):
    """Writes when it started to the file its input names, then sleeps."""

    name: ClassVar[str] = "stamped"

    def run(self, arguments: BaseModel) -> ToolResult:
        assert isinstance(arguments, Text)
        with open(arguments.text, "a") as stamps:
            stamps.write(f"{time.time()}\n")
        return super().run(arguments)


class DeterministicSleepTool(SleepTool):
    deterministic: ClassVar[bool] = True


class AbortTool(WhereTool):
    """Kills its own process, as a crash in a native library does."""

    name: ClassVar[str] = "abort"

    def run(self, arguments: BaseModel) -> ToolResult:
        os.abort()


class GreedyTool(WhereTool):
    """Asks for more memory than its sandbox allows."""

    name: ClassVar[str] = "greedy"

    def run(self, arguments: BaseModel) -> ToolResult:
        return ToolResult(content=str(len(bytearray(2 << 30))))


class FloodTool(WhereTool):
    """Returns far more than an agent can read, and more sources than it can cite."""

    name: ClassVar[str] = "flood"

    def run(self, arguments: BaseModel) -> ToolResult:
        hits = [RetrievedChunk(Chunk(f"c{n}", "text", "s", "a.md"), 1.0) for n in range(500)]
        return ToolResult(content="x" * 1_000_000, sources=hits)


class WrongTypeTool(WhereTool):
    """Returns what a ToolResult is not."""

    name: ClassVar[str] = "wrong"

    def run(self, arguments: BaseModel) -> ToolResult:
        return {"content": "not a ToolResult"}  # type: ignore[return-value]


class PoliteTool(WhereTool):
    """In-process: works in small pieces and stops when told to."""

    name: ClassVar[str] = "polite"
    sandboxed: ClassVar[bool] = False
    stopped = threading.Event()

    def run(self, arguments: BaseModel) -> ToolResult:
        try:
            while True:
                raise_if_cancelled()
                time.sleep(0.01)
        finally:
            PoliteTool.stopped.set()


class LateTool(WhereTool):
    """In-process: finishes a moment after its time limit, without looking at the flag."""

    name: ClassVar[str] = "late"
    sandboxed: ClassVar[bool] = False

    def run(self, arguments: BaseModel) -> ToolResult:
        time.sleep(0.3)
        return ToolResult(content="found it")


class DeafTool(WhereTool):
    """In-process: ignores its cancellation."""

    name: ClassVar[str] = "deaf"
    sandboxed: ClassVar[bool] = False
    release = threading.Event()

    def run(self, arguments: BaseModel) -> ToolResult:
        DeafTool.release.wait(10)
        return ToolResult(content="late")


@pytest.fixture(scope="module")
def module_sandbox() -> Iterator[Sandbox]:
    box = Sandbox("test-tools", SandboxLimits(workers=2, memory_bytes=512 << 20))
    yield box
    box.close()


@pytest.fixture
def sandbox(module_sandbox: Sandbox) -> Sandbox:
    # Every worker warm, those that replaced killed ones included: the tools below have a
    # 0.5 s limit, less than a cold worker may spend importing this module.
    warm_tools_sandbox([WhereTool], sandbox=module_sandbox)
    return module_sandbox


def test_a_sandboxed_tool_runs_in_a_worker_process(sandbox: Sandbox) -> None:
    call = ToolRunner(sandbox=sandbox).call(WhereTool(), "x")
    assert call.result.ok and int(call.result.content) != os.getpid()
    assert ToolRunner(sandbox=sandbox).call(CalculatorTool(), "6 * 7").result.content == "42"


def test_the_smaller_time_limit_wins() -> None:
    assert ToolRunner(timeout=60).time_limit(CalculatorTool()) == 5.0
    assert ToolRunner(timeout=2).time_limit(CalculatorTool()) == 2
    assert ToolRunner(timeout=60).time_limit(WhereTool()) == 60


def test_a_timed_out_deterministic_tool_is_killed_and_not_tried_again(sandbox: Sandbox) -> None:
    waits: list[float] = []
    runner = ToolRunner(sandbox=sandbox, retries=2, sleep=waits.append)
    call = runner.call(DeterministicSleepTool(), "x")
    assert call.result.error is not None and call.result.error.code == "timeout"
    assert call.result.error.message == "sleep did not answer within 0.5 s and was stopped"
    assert not call.result.error.retryable and call.attempts == 1 and waits == []
    assert runner.call(WhereTool(), "x").result.ok  # a fresh worker serves the next call


def test_a_timed_out_tool_that_may_answer_another_time_is_tried_again(sandbox: Sandbox) -> None:
    waits: list[float] = []
    call = ToolRunner(sandbox=sandbox, retries=1, sleep=waits.append).call(SleepTool(), "x")
    assert call.result.error is not None and call.result.error.retryable
    assert call.attempts == 2 and waits == [0.5]


def _two_calls_at_once(runner: ToolRunner, stamps: Path) -> float:
    """Seconds between the starts of two calls made together from two threads."""
    calls = [
        threading.Thread(target=runner.call, args=(StampedSleepTool(), str(stamps)))
        for _ in range(2)
    ]
    for call in calls:
        call.start()
    for call in calls:
        call.join(10)
    first, second = sorted(float(line) for line in stamps.read_text().split())
    stamps.unlink()
    return second - first


def test_one_runner_holds_one_sandbox_worker_at_a_time(sandbox: Sandbox, tmp_path: Path) -> None:
    # One request's runner: its parallel calls (a ReWOO level) take turns in the sandbox,
    # so the other worker stays free for other requests.
    stamps = tmp_path / "stamps"
    assert _two_calls_at_once(ToolRunner(sandbox=sandbox, retries=0), stamps) >= 0.5
    warm_tools_sandbox([WhereTool], sandbox=sandbox)  # the killed workers' replacements
    two_slots = ToolRunner(sandbox=sandbox, retries=0, sandbox_slots=2)
    assert _two_calls_at_once(two_slots, stamps) < 0.5


def test_a_crash_and_the_memory_limit_fail_their_call_alone(sandbox: Sandbox) -> None:
    runner = ToolRunner(sandbox=sandbox, retries=0)
    crashed = runner.call(AbortTool(), "x").result.error
    assert crashed is not None and crashed.code == "tool_crashed"
    assert crashed.message == "abort crashed: the worker process died (signal SIGABRT)"
    greedy = runner.call(GreedyTool(), "x").result.error
    assert greedy is not None and greedy.code == "out_of_memory"
    assert greedy.message == "greedy was stopped: it needed more memory than the 512 MiB limit"
    assert runner.call(WhereTool(), "x").result.ok


def test_a_tool_that_cannot_reach_its_worker_fails_with_the_reason(sandbox: Sandbox) -> None:
    class Local(WhereTool):
        pass

    failed = ToolRunner(sandbox=sandbox).call(Local(), "x").result.error
    assert failed is not None and failed.code == "tool_failed"
    assert "cannot be sent to a worker process" in failed.message


def test_inputs_past_the_limit_are_refused_before_anything_runs(sandbox: Sandbox) -> None:
    runner = ToolRunner(sandbox=sandbox, limits=ToolLimits(input_chars=100))
    call = runner.call(WhereTool(), "x" * 101)
    assert call.attempts == 0 and call.result.error is not None
    assert call.result.error.code == "input_too_long"
    assert call.result.error.message == (
        "the input of where has 101 characters; tool inputs are limited to 100"
    )


def test_results_past_the_limits_are_cut_saying_so(sandbox: Sandbox) -> None:
    result = ToolRunner(sandbox=sandbox).call(FloodTool(), "x").result
    assert len(result.content) == ToolLimits().content_chars
    assert result.content.endswith(
        "[… cut: the result had 1,000,000 characters, the limit is 8,000]"
    )
    assert len(result.sources) == ToolLimits().sources
    wrong = ToolRunner(sandbox=sandbox).call(WrongTypeTool(), "x").result.error
    assert wrong is not None and wrong.code == "invalid_result"
    assert wrong.message == "wrong returned an invalid result: a dict, not a ToolResult"


def test_an_in_process_tool_is_cancelled_at_its_timeout_and_stops(
    caplog: pytest.LogCaptureFixture,
) -> None:
    PoliteTool.stopped.clear()
    with caplog.at_level(logging.WARNING):
        call = ToolRunner(timeout=0.2, retries=0).call(PoliteTool(), "x")
    assert call.result.error is not None and call.result.error.code == "timeout"
    assert call.result.error.message == "polite did not answer within 0.2 s and was cancelled"
    assert call.result.error.retryable  # its thread stopped: another try adds no thread
    assert PoliteTool.stopped.is_set() and "left running" not in caplog.text


def test_no_call_runs_past_the_answers_deadline_and_retries_stop_at_it() -> None:
    """A call's time limit is cut to the deadline: a hung tool with three tries of 60 s
    each once held an answer for three minutes past its own deadline."""
    PoliteTool.stopped.clear()
    started = time.monotonic()
    runner = ToolRunner(timeout=60, retries=2, backoff=5, deadline=started + 0.5)
    call = runner.call(PoliteTool(), "x")
    assert time.monotonic() - started < 2.5 and call.attempts == 1
    assert call.result.error is not None and call.result.error.code == "timeout"
    assert PoliteTool.stopped.is_set()
    late = runner.call(WhereTool(), "x")  # the deadline has passed: not run at all
    assert late.attempts == 0 and late.result.error is not None
    assert late.result.error.message == "where was not run: the answer's time is up"


class HungSandbox:
    """Stands for the tool sandbox: every call runs to its time limit."""

    def run(self, function: object, *args: object, timeout: float) -> object:
        assert timeout > 0  # the sandbox reads 0 as no limit at all
        time.sleep(timeout)
        raise SandboxTimeout("past its limit")


def test_sandboxed_calls_waiting_their_turn_heed_the_deadline_when_it_comes() -> None:
    """The calls of one ReWOO level share the runner's sandbox slot: the limit was worked
    out before the wait, so three hung calls with a 1 s deadline ended at 1, 2 and 3 s."""
    runner = ToolRunner(
        timeout=60,
        retries=0,
        sandbox=HungSandbox(),
        deadline=time.monotonic() + 1.0,  # type: ignore[arg-type]
    )
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=3) as pool:
        calls = list(pool.map(lambda _: runner.call(WhereTool(), "x"), range(3)))
    assert time.monotonic() - started < 1.8
    codes = sorted(c.result.error.code for c in calls if c.result.error is not None)
    assert codes == ["deadline", "deadline", "timeout"]


def test_a_stopped_runner_cancels_its_call_in_a_thread_and_runs_no_other() -> None:
    PoliteTool.stopped.clear()
    runner = ToolRunner(timeout=60, retries=2)
    threading.Timer(0.3, runner.stop).start()
    started = time.monotonic()
    call = runner.call(PoliteTool(), "x")
    assert time.monotonic() - started < 2 and call.attempts == 1
    assert call.result.error is not None and call.result.error.code == "cancelled"
    assert not call.result.error.retryable and PoliteTool.stopped.is_set()
    after = runner.call(WhereTool(), "x")
    assert after.attempts == 0 and after.result.error is not None
    assert after.result.error.code == "cancelled"


def test_a_result_that_arrives_within_the_grace_is_the_calls_result() -> None:
    # What it did (docsearch numbering passages) must not be thrown away for being late.
    call = ToolRunner(timeout=0.2, retries=0, cancel_grace=1.0).call(LateTool(), "x")
    assert call.result.ok and call.result.content == "found it"


def test_an_in_process_tool_that_ignores_its_cancellation_is_named_and_not_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    DeafTool.release.clear()
    try:
        with caplog.at_level(logging.WARNING):
            call = ToolRunner(timeout=0.2, retries=2, cancel_grace=0.1).call(DeafTool(), "x")
    finally:
        DeafTool.release.set()
    assert call.attempts == 1 and call.result.error is not None
    assert not call.result.error.retryable
    assert "tool deaf ran past its 0.2 s limit" in caplog.text
    assert "its thread is left running" in caplog.text


def test_warming_the_sandbox_starts_every_worker() -> None:
    box = Sandbox("warm", SandboxLimits(workers=2))
    try:
        assert warm_tools_sandbox([CalculatorTool, DocSearchTool], sandbox=box) == 2
    finally:
        box.close()


def test_warming_the_shared_sandbox_preloads_the_tools_modules() -> None:
    from ragloom.agents.tools.runner import SANDBOX_NAME, TOOLS_LIMITS, tools_sandbox
    from ragloom.sandbox import configure_sandbox

    try:
        assert warm_tools_sandbox([WhereTool]) >= 1
        assert WhereTool.__module__ in tools_sandbox().limits.preload
        assert "ragloom.agents.tools" in tools_sandbox().limits.preload
    finally:
        configure_sandbox(SANDBOX_NAME, TOOLS_LIMITS)  # as the other tests expect it
