"""theflow per-call overhead: Ragloom's BaseComponent against plain Python calls.

A 3-node pipeline (a parent calling two children) runs the same work as plain methods;
the difference per call is theflow's overhead. theflow's default settings (which pickle
every run to disk) are measured in a child process in a throwaway folder, for reference.
Goal: at most 1 ms per call and nothing written to disk.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from theflow import Node

from ragloom.base import BaseComponent


class AddOne(BaseComponent):
    def run(self, x: int) -> int:
        return x + 1


class Twice(BaseComponent):
    first: AddOne = Node(default=AddOne)
    second: AddOne = Node(default=AddOne)

    def run(self, x: int) -> int:
        return self.second(self.first(x))


class PlainAddOne:
    def run(self, x: int) -> int:
        return x + 1


class PlainTwice:
    def __init__(self) -> None:
        self.first, self.second = PlainAddOne(), PlainAddOne()

    def run(self, x: int) -> int:
        return self.second.run(self.first.run(x))


CHILD = r"""
import sys, time
from theflow import Function, Node
class AddOne(Function):
    def run(self, x): return x + 1
class Twice(Function):
    first: AddOne = Node(default=AddOne)
    second: AddOne = Node(default=AddOne)
    def run(self, x): return self.second(self.first(x))
p = Twice(); p(0)
n = int(sys.argv[1]); t = time.perf_counter()
for i in range(n): p(i)
print((time.perf_counter() - t) / n)
"""


def _per_call(fn: Callable[[int], int], calls: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for i in range(calls):
            fn(i)
        best = min(best, (time.perf_counter() - started) / calls)
    return best


def _theflow_defaults(calls: int) -> float:
    with tempfile.TemporaryDirectory() as folder:
        env = {k: v for k, v in os.environ.items() if not k.startswith("THEFLOW_")}
        env["TMPDIR"] = folder
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(calls)],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    component, plain = Twice(), PlainTwice()
    component(0)
    ours = _per_call(component, args.calls, args.repeats)
    baseline = _per_call(plain.run, args.calls, args.repeats)
    defaults = _theflow_defaults(max(50, args.calls // 20))
    print("theflow overhead, 3-node call (parent + 2 children), best of", args.repeats)
    print(f"  plain Python calls          {baseline * 1e3:9.4f} ms/call")
    print(f"  ragloom BaseComponent       {ours * 1e3:9.4f} ms/call")
    print(f"  theflow defaults (to disk)  {defaults * 1e3:9.4f} ms/call")
    print(f"  overhead of BaseComponent   {(ours - baseline) * 1e3:9.4f} ms/call (goal <= 1 ms)")
    print(f"  ratio BaseComponent / plain {ours / baseline:9.1f}x")
    print(f"  ratio defaults / ours       {defaults / ours:9.1f}x")


if __name__ == "__main__":
    main()
