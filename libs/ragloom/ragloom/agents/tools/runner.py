"""Calling a tool the way agents do: with a timeout, and retries when they may help."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ragloom.agents.tools.base import BaseTool, ToolResult

__all__ = ["ToolCall", "ToolRunner", "call_record"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolCall:
    """One call's result, wall time (retries and waits included) and attempts."""

    result: ToolResult
    seconds: float
    attempts: int


class ToolRunner:
    """Runs tool calls with a timeout each, retrying retryable errors with backoff.

    A call that times out counts as a retryable ``timeout`` error. Its thread cannot be
    stopped: it finishes in the background and its result is ignored. ``tool.invoke``
    turns exceptions into failed results, so nothing escapes the thread.
    """

    def __init__(
        self,
        *,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._sleep = sleep

    def _once(self, tool: BaseTool, tool_input: str) -> ToolResult:
        box: list[ToolResult] = []
        # A daemon thread per attempt: a call that hangs can be abandoned (it cannot be
        # stopped) without holding up its retry, the agent, or the interpreter's exit.
        thread = threading.Thread(
            target=lambda: box.append(tool.invoke(tool_input)), daemon=True, name=tool.name
        )
        thread.start()
        thread.join(self.timeout)
        if box:
            return box[0]
        return ToolResult.failure(
            "timeout", f"{tool.name} did not answer within {self.timeout:g} s", retryable=True
        )

    def call(self, tool: BaseTool, tool_input: str) -> ToolCall:
        """Call ``tool`` with ``tool_input``; never raises."""
        started = time.perf_counter()
        attempts = 0
        while True:
            attempts += 1
            result = self._once(tool, tool_input)
            if result.ok or not result.error.retryable or attempts > self.retries:
                break
            delay = self.backoff * 2 ** (attempts - 1)
            logger.info("%s failed (%s); retry in %.2f s", tool.name, result.error.code, delay)
            self._sleep(delay)
        return ToolCall(result, time.perf_counter() - started, attempts)


def call_record(
    tool_input: str, result: ToolResult, attempts: int, max_chars: int = 2000
) -> dict[str, Any]:
    """What ``ask --json`` shows of one tool call: input, output or error, attempts."""
    record: dict[str, Any] = {"input": tool_input, "attempts": attempts}
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
