"""Calling a tool the way agents do: bounded, sandboxed or cancellable, retried if it helps.

Every call, whatever the tool (plugins' included), goes through :class:`ToolRunner`:

- Its input is bounded (:class:`~ragloom.agents.tools.limits.ToolLimits`); so is its
  result, whatever the tool returned.
- It has a time limit: the runner's ``timeout``, or the tool's own ``timeout`` if smaller.
- A tool with ``sandboxed = True`` (the default) runs in a worker process of the
  ``"tools"`` sandbox (:mod:`ragloom.sandbox`): past its time limit the worker is killed,
  so nothing keeps running and no computation, however it holds the GIL, can stall the
  app. A crash or the memory limit fails that call alone.
- A tool with ``sandboxed = False`` (it needs the request: ``docsearch``, ``llm``) runs in
  a thread; past its time limit the runner sets its cancellation flag
  (:mod:`ragloom.agents.tools.cancel`), waits ``cancel_grace`` seconds, and logs a warning
  naming the tool if its thread is still running.
- A runner serves one request (an agent makes its own), and at most
  ``sandbox_slots`` of its calls use sandbox workers at once (default 1; the others
  wait): a question that plans many runaway calls holds one worker, not all of them, so
  the other questions' calls are still served.
- An error marked retryable is tried again with exponential backoff. A timeout or a
  crash is retryable only for a tool that is not ``deterministic`` (an in-process tool's
  timeout only when its thread stopped); the memory limit never is.

:meth:`ToolRunner.call` never raises.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ragloom.agents.tools.base import BaseTool, ToolResult
from ragloom.agents.tools.cancel import cancellable
from ragloom.agents.tools.limits import ToolLimits, bound_result, cut_text, refuse_input
from ragloom.sandbox import (
    Sandbox,
    SandboxCrash,
    SandboxError,
    SandboxLimits,
    SandboxMemoryError,
    SandboxTimeout,
    configure_sandbox,
    get_sandbox,
)

__all__ = [
    "SANDBOX_NAME",
    "SHOWN_CHARS",
    "TOOLS_LIMITS",
    "ToolCall",
    "ToolRunner",
    "call_record",
    "invoke_bounded",
    "shown_input",
    "tools_sandbox",
    "warm_tools_sandbox",
]

logger = logging.getLogger(__name__)

SANDBOX_NAME = "tools"
"""The shared sandbox (:func:`ragloom.sandbox.get_sandbox`) sandboxed tools run in."""

TOOLS_LIMITS = SandboxLimits(preload=("ragloom.agents.tools",))
"""The tool sandbox's limits unless configured otherwise (``configure_sandbox``): the
defaults of :class:`~ragloom.sandbox.SandboxLimits` (1 GiB of address space, 64 MiB of
files, two workers), each worker importing the tool interface when it starts."""


def tools_sandbox() -> Sandbox:
    """The process's tool sandbox (:data:`TOOLS_LIMITS` unless configured)."""
    return get_sandbox(SANDBOX_NAME, TOOLS_LIMITS)


@dataclass(frozen=True)
class ToolCall:
    """One call's result, wall time (retries and waits included) and attempts."""

    result: ToolResult
    seconds: float
    attempts: int


def invoke_bounded(tool: BaseTool, tool_input: str, limits: ToolLimits) -> ToolResult:
    """``tool.invoke(tool_input)``, never raising, its result bounded.

    What a sandbox worker runs, so that an oversized result is cut before it is pickled
    back; the thread of an in-process tool runs it too.
    """
    try:
        result = tool.invoke(tool_input)
    except MemoryError:
        raise  # a sandbox worker reports it as its memory limit
    except Exception as exc:  # invoke() must not raise, but a plugin may override it
        result = ToolResult.failure("tool_failed", f"{type(exc).__name__}: {exc}")
    return bound_result(tool.name, result, limits)


_STOP_POLL_SECONDS = 0.1  # how often a call in a thread looks whether the answer stopped
_MIN_LIMIT_SECONDS = 0.05  # no call starts with less time than this before the deadline


class ToolRunner:
    """Runs tool calls under their limits and retries them when that may help.

    ``timeout``: seconds a call may take (a tool's own ``timeout`` may lower it);
    ``retries``: further attempts of a retryable failure, waiting ``backoff * 2**n``;
    ``limits``: the bounds of inputs and results; ``cancel_grace``: seconds an in-process
    tool has to stop once cancelled; ``sandbox``: where sandboxed tools run (default: the
    shared ``"tools"`` sandbox); ``sandbox_slots``: how many of this runner's calls may use
    sandbox workers at once; ``deadline``: a :func:`time.monotonic` time (the answer's)
    past which no call runs, and to which every call's time limit is cut.

    :meth:`stop` (an answer closed) fails the calls not yet run and cancels the in-process
    ones under way; a sandboxed call under way ends at its own time limit.
    """

    def __init__(
        self,
        *,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        limits: ToolLimits | None = None,
        cancel_grace: float = 0.5,
        sandbox: Sandbox | None = None,
        sandbox_slots: int = 1,
        deadline: float | None = None,
    ) -> None:
        self.timeout = timeout
        self.deadline = deadline
        self._stopping = threading.Event()
        self.retries = retries
        self.backoff = backoff
        self.limits = limits or ToolLimits()
        self.cancel_grace = cancel_grace
        self._sandbox = sandbox
        self._slots = threading.BoundedSemaphore(max(1, sandbox_slots))
        self._sleep = sleep

    def stop(self) -> None:
        """No call runs from now on; in-process calls under way are cancelled."""
        self._stopping.set()

    def time_limit(self, tool: BaseTool) -> float:
        """Seconds a call of ``tool`` may take: the smaller of the runner's and the tool's,
        and no further than the deadline."""
        own = getattr(tool, "timeout", None)
        limit = min(self.timeout, own) if own else self.timeout
        if self.deadline is not None:
            limit = min(limit, max(self.deadline - time.monotonic(), 0.0))
        return limit

    def _not_run(self, tool: BaseTool) -> ToolResult | None:
        """The failure of a call that must not start now, or ``None``. Past it, a call
        has a time limit of at least ``_MIN_LIMIT_SECONDS`` (the sandbox reads 0 as none)."""
        if self._stopping.is_set():
            return ToolResult.failure("cancelled", f"{tool.name} was not run: the answer stopped")
        if self.deadline is not None and time.monotonic() >= self.deadline - _MIN_LIMIT_SECONDS:
            return ToolResult.failure(
                "deadline", f"{tool.name} was not run: the answer's time is up"
            )
        return None

    def _in_sandbox(self, tool: BaseTool, tool_input: str) -> ToolResult:
        again = not tool.deterministic
        sandbox = self._sandbox or tools_sandbox()
        limit = 0.0
        try:
            with self._slots:
                # Its limit once its turn came: the calls of one level wait here in turn,
                # and the deadline (or a stop) may have come meanwhile.
                stopped = self._not_run(tool)
                if stopped is not None:
                    return stopped
                limit = self.time_limit(tool)
                return sandbox.run(invoke_bounded, tool, tool_input, self.limits, timeout=limit)
        except SandboxTimeout:
            message = f"{tool.name} did not answer within {limit:g} s and was stopped"
            return ToolResult.failure("timeout", message, retryable=again)
        except SandboxMemoryError as exc:
            return ToolResult.failure("out_of_memory", f"{tool.name} was stopped: {exc}")
        except SandboxCrash as exc:
            message = f"{tool.name} crashed: {exc}"
            return ToolResult.failure("tool_crashed", message, retryable=again)
        except SandboxError as exc:
            return ToolResult.failure("tool_failed", f"{tool.name} could not run: {exc}")
        except Exception as exc:  # invoke_bounded catches everything; this is the last net
            return ToolResult.failure("tool_failed", f"{type(exc).__name__}: {exc}")

    def _in_thread(self, tool: BaseTool, tool_input: str, limit: float) -> ToolResult:
        results: list[ToolResult] = []
        flag = threading.Event()

        def work() -> None:
            with cancellable(flag):
                try:
                    results.append(invoke_bounded(tool, tool_input, self.limits))
                except MemoryError:
                    message = f"{tool.name} ran out of memory"
                    results.append(ToolResult.failure("out_of_memory", message))

        # A daemon thread per attempt: one that ignores its cancellation is abandoned
        # without holding up its retry, the agent, or the interpreter's exit.
        thread = threading.Thread(target=work, daemon=True, name=f"tool:{tool.name}")
        thread.start()
        ends = time.monotonic() + limit
        while thread.is_alive() and not self._stopping.is_set():
            if (left := ends - time.monotonic()) <= 0:
                break
            thread.join(min(left, _STOP_POLL_SECONDS))
        if not thread.is_alive():
            if results:
                return results[0]
            return ToolResult.failure("tool_failed", f"{tool.name} ended without a result")
        flag.set()
        thread.join(self.cancel_grace)
        stopped = not thread.is_alive()
        if stopped and results and results[0].ok:
            # It finished as its time ran out: its result, and what it recorded, stand.
            return results[0]
        if not stopped:
            logger.warning(
                "tool %s ran past its %g s limit and did not stop %g s after it was "
                "cancelled: its thread is left running",
                tool.name,
                limit,
                self.cancel_grace,
            )
        if self._stopping.is_set():
            return ToolResult.failure("cancelled", f"{tool.name} was cancelled: the answer stopped")
        message = f"{tool.name} did not answer within {limit:g} s and was cancelled"
        return ToolResult.failure("timeout", message, retryable=stopped and not tool.deterministic)

    def _once(self, tool: BaseTool, tool_input: str) -> ToolResult:
        if getattr(tool, "sandboxed", True):
            result = self._in_sandbox(tool, tool_input)
        else:
            result = self._in_thread(tool, tool_input, self.time_limit(tool))
        return bound_result(tool.name, result, self.limits)

    def call(self, tool: BaseTool, tool_input: str) -> ToolCall:
        """Call ``tool`` with ``tool_input``; never raises."""
        started = time.perf_counter()
        refused = refuse_input(tool.name, tool_input, self.limits)
        if refused is not None:
            return ToolCall(refused, time.perf_counter() - started, 0)
        stopped = self._not_run(tool)
        if stopped is not None:
            return ToolCall(stopped, time.perf_counter() - started, 0)
        attempts = 0
        while True:
            attempts += 1
            result = self._once(tool, tool_input)
            error = result.error
            if error is None or not error.retryable or attempts > self.retries:
                break
            delay = self.backoff * 2 ** (attempts - 1)
            if self.deadline is not None:
                delay = min(delay, max(self.deadline - time.monotonic(), 0.0))
            logger.info("%s failed (%s); retry in %.2f s", tool.name, error.code, delay)
            self._sleep(delay)
            if self._not_run(tool) is not None:
                break  # its last failure says more than "not run"
        return ToolCall(result, time.perf_counter() - started, attempts)


def _import_in_worker(modules: tuple[str, ...], hold: float) -> int:
    """Import ``modules`` in a sandbox worker; hold it a moment so the next call finds
    another worker; return its process id."""
    for module in modules:
        importlib.import_module(module)
    time.sleep(hold)
    return os.getpid()


def warm_tools_sandbox(
    tools: Iterable[type[BaseTool]] = (), *, sandbox: Sandbox | None = None, within: float = 30.0
) -> int:
    """Start the tool sandbox's workers and import the sandboxed ``tools``' modules in each.

    A cold worker costs about 0.3 s (spawn and imports) on its first call; the app calls
    this at startup in a background thread so that no question pays it. The shared
    sandbox (``sandbox`` left ``None``) is also told to preload those modules, so that a
    worker replacing a killed one imports them before its first call. It tries for at
    most ``within`` seconds and returns how many workers answered; it never raises (a
    failure is logged, and calls start workers anyway).
    """
    started = time.perf_counter()
    sandboxed = sorted({tool.__module__ for tool in tools if getattr(tool, "sandboxed", True)})
    modules = ("ragloom.agents.tools", *sandboxed)
    if sandbox is None:
        preload = tools_sandbox().limits.preload
        missing = tuple(module for module in modules if module not in preload)
        if missing:
            # Workers that replace killed ones then import the tools too, before any call:
            # a tight time limit is never spent importing a plugin's module.
            configure_sandbox(SANDBOX_NAME, preload=preload + missing)
    box = sandbox or tools_sandbox()
    workers = box.limits.workers
    seen: set[int] = set()
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tool-warm-up") as pool:
            # Calls land on whichever worker is free; one still starting is found later.
            while len(seen) < workers and time.perf_counter() - started < within:
                calls = [
                    pool.submit(box.run, _import_in_worker, modules, 0.05, timeout=within)
                    for _ in range(workers)
                ]
                seen.update(call.result() for call in calls)
    except RuntimeError as exc:  # the interpreter is exiting: no new work may start
        logger.debug("warming up the tool sandbox stopped: %s", exc)
    except Exception as exc:
        logger.warning("warming up the tool sandbox failed: %s", exc)
    seconds = time.perf_counter() - started
    logger.info("tool sandbox: %d workers warm in %.2f s", len(seen), seconds)
    return len(seen)


SHOWN_CHARS = 2000
"""Characters of a tool call's input and output that its events carry (the UI's steps,
``ask --json``): an input may be 16,000 characters once ReWOO pasted evidence in."""


def shown_input(tool_input: str, max_chars: int = SHOWN_CHARS) -> str:
    """A tool call's input as its events show it: cut past ``max_chars``, saying so."""
    return cut_text(tool_input, max_chars, "input")


def call_record(
    tool_input: str, result: ToolResult, attempts: int, max_chars: int = SHOWN_CHARS
) -> dict[str, Any]:
    """What ``ask --json`` shows of one tool call: input, output or error, attempts."""
    record: dict[str, Any] = {"input": shown_input(tool_input, max_chars), "attempts": attempts}
    if result.ok:
        record["output"] = result.content[:max_chars]
        if result.sources:
            record["sources"] = [
                {"source": s.chunk.source_name, "page": s.chunk.page, "chunk_id": s.chunk.id}
                for s in result.sources
            ]
    else:
        assert result.error is not None
        record["error"] = {
            "code": result.error.code,
            "message": result.error.message,
            "retryable": result.error.retryable,
        }
    return record
