"""The tool sandbox's cost: a calculator call through ToolRunner against a direct call.

    .venv/bin/python benchmarks/tool_sandbox.py [--calls 500]

Agents call tools through :class:`~ragloom.agents.tools.ToolRunner`, which runs a
sandboxed tool (the calculator) in a worker process of the ``"tools"`` sandbox. Measured
in one run, per call (median and 95th percentile of ``--calls`` calls):

- the baseline: ``CalculatorTool().invoke(...)`` called directly, in this process;
- the runner with the tool in a thread of this process (``sandboxed = False``): the cost
  of the runner itself;
- the runner with the sandbox, its workers warm (as after ``warm_tools_sandbox()`` at startup).

It prints the sandbox's overhead per call in ms and the ratio to the direct call (goal:
under 20 ms), then what a cold start costs (spawning the workers and importing the tools,
which ``warm_tools_sandbox()`` moves to startup) and how soon a runaway call is stopped.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import ClassVar

from pydantic import BaseModel

from ragloom.agents.tools import (
    BaseTool,
    CalculatorTool,
    ToolResult,
    ToolRunner,
    warm_tools_sandbox,
)
from ragloom.sandbox import Sandbox, SandboxLimits

EXPRESSION = "3.5 ** 0.98 * 2 + sqrt(16) - round(1234.5678, 2)"


class InProcessCalculator(CalculatorTool):
    """The calculator in a thread of this process: the runner without the sandbox."""

    sandboxed: ClassVar[bool] = False


class RunawayTool(BaseTool):
    """Spins in C holding the GIL (``round(5, -10**9)``), as a hostile plugin's tool may."""

    class Arguments(BaseModel):
        what: str

    name: ClassVar[str] = "runaway"
    description: ClassVar[str] = "Never finishes."
    deterministic: ClassVar[bool] = True
    timeout: ClassVar[float | None] = 1.0

    def run(self, arguments: BaseModel) -> ToolResult:
        return ToolResult(content=str(round(5, -(10**9))))


def _times(call: Callable[[], object], calls: int) -> list[float]:
    call()  # the first call of each kind is not counted
    seconds = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return seconds


def _median_p95(seconds: list[float]) -> tuple[float, float]:
    ordered = sorted(seconds)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500, help="calls of each kind")
    args = parser.parse_args()

    box = Sandbox("benchmark-tools", SandboxLimits())
    try:
        started = time.perf_counter()
        warmed = warm_tools_sandbox([CalculatorTool], sandbox=box)
        warm_seconds = time.perf_counter() - started
        tool = CalculatorTool()
        expected = tool.invoke(EXPRESSION).content
        sandboxed, in_thread = ToolRunner(sandbox=box), ToolRunner(sandbox=box)
        assert sandboxed.call(tool, EXPRESSION).result.content == expected

        rows = {
            "direct invoke()": _times(lambda: tool.invoke(EXPRESSION), args.calls),
            "runner, in a thread": _times(
                lambda: in_thread.call(InProcessCalculator(), EXPRESSION), args.calls
            ),
            "runner, sandboxed": _times(lambda: sandboxed.call(tool, EXPRESSION), args.calls),
        }
        stats = {label: _median_p95(seconds) for label, seconds in rows.items()}
        print(f"calculator call ({EXPRESSION!r}), {args.calls} calls each")
        print(f"{'':<22} {'median ms':>10} {'p95 ms':>9}")
        for label, (median, p95) in stats.items():
            print(f"{label:<22} {median * 1e3:>10.3f} {p95 * 1e3:>9.3f}")
        base_median, base_p95 = stats["direct invoke()"]
        box_median, box_p95 = stats["runner, sandboxed"]
        print(
            f"overhead of the tool sandbox per calculator call against a direct call: "
            f"{(box_median - base_median) * 1e3:.2f} ms median, "
            f"{(box_p95 - base_p95) * 1e3:.2f} ms p95 (aim: under 20 ms); "
            f"ratio {box_median / base_median:.0f}x"
        )

        cold = Sandbox("benchmark-cold", SandboxLimits())
        try:
            started = time.perf_counter()
            ToolRunner(sandbox=cold).call(tool, EXPRESSION)
            cold_seconds = time.perf_counter() - started
        finally:
            cold.close()
        print(
            f"cold start: first sandboxed call {cold_seconds * 1e3:.0f} ms; "
            f"warm_tools_sandbox() of {warmed} workers {warm_seconds * 1e3:.0f} ms"
        )

        started = time.perf_counter()
        refused = sandboxed.call(tool, "round(5, -10**8)").result
        refusal = time.perf_counter() - started
        started = time.perf_counter()
        stopped = sandboxed.call(RunawayTool(), "x")
        kill = time.perf_counter() - started
        print(
            f"round(5, -10**8): refused in {refusal * 1e3:.1f} ms ({refused.error.code}); "
            f"a runaway tool with a 1 s limit: stopped after {kill:.2f} s "
            f"({stopped.result.error.code}, {stopped.attempts} attempt)"
        )
    finally:
        box.close()


if __name__ == "__main__":
    main()
