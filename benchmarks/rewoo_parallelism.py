"""ReWOO's worker runs independent tool calls in parallel: wall time per DAG level.

    .venv/bin/python benchmarks/rewoo_parallelism.py [--k 1,2,4,8] [--delay 0.2]

A plan of ``k`` independent calls of a tool that sleeps ``delay`` seconds is one DAG
level; a chain of ``k`` dependent calls is ``k`` levels. Each is run through
:class:`~ragloom.agents.rewoo.PlanWorker` (the same one the ReWOO mode uses, with its
thread pool and per-call timeout), and the wall time per level is printed against the
``delay`` baseline measured in the same run (a bare ``time.sleep(delay)``).
Goal: at most 1.2 x ``delay`` per level.
"""

from __future__ import annotations

import argparse
import time
from typing import ClassVar

from pydantic import BaseModel

from ragloom.agents.rewoo import PlanWorker, parse_plan, plan_levels
from ragloom.agents.tools import BaseTool, ToolResult


class SleepTool(BaseTool):
    """Sleeps for the configured delay, like a slow remote call."""

    class Arguments(BaseModel):
        what: str

    name: ClassVar[str] = "slow"
    description: ClassVar[str] = "Takes a while."
    # A remote call waits, it does not compute: in threads, not the tool sandbox's workers.
    sandboxed: ClassVar[bool] = False

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def run(self, arguments: BaseModel) -> ToolResult:
        time.sleep(self.delay)
        return ToolResult(content="done")


def run_plan(text: str, delay: float) -> tuple[int, float]:
    plan = parse_plan(text)
    worker = PlanWorker({"slow": SleepTool(delay)})  # the defaults the ReWOO mode uses
    started = time.perf_counter()
    for _ in worker.run(plan):
        pass
    return len(plan_levels(plan)), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", default="1,2,4,8", help="numbers of calls, comma-separated")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per call")
    args = parser.parse_args()
    started = time.perf_counter()
    time.sleep(args.delay)
    baseline = time.perf_counter() - started
    print(f"baseline: one bare sleep of {args.delay:g} s took {baseline * 1000:.1f} ms")
    print(f"{'plan':<12} {'k':>3} {'levels':>6} {'wall ms':>8} {'ms/level':>9} {'x delay':>8}")
    for k in (int(v) for v in args.k.split(",")):
        independent = "\n".join(f"#E{n} = slow[call {n}]" for n in range(1, k + 1))
        chain = "\n".join(
            f"#E{n} = slow[{'after #E' + str(n - 1) if n > 1 else 'first'}]"
            for n in range(1, k + 1)
        )
        for label, text in (("independent", independent), ("chain", chain)):
            levels, wall = run_plan(text, args.delay)
            per_level = wall / levels
            print(
                f"{label:<12} {k:>3} {levels:>6} {wall * 1000:>8.1f} {per_level * 1000:>9.1f} "
                f"{per_level / baseline:>8.2f}"
            )


if __name__ == "__main__":
    main()
