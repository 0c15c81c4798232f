"""A replay LLM that takes its time: to keep an answer running while a test does more."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from theflow import Param

from ragloom.llms.base import ChatMessage, GenerationOptions, LLMStreamItem
from ragloom.llms.replay import ReplayLLM

__all__ = ["SlowLLM"]


class SlowLLM(ReplayLLM):
    """A :class:`~ragloom.llms.replay.ReplayLLM` that waits ``delay`` seconds per call; with
    ``hold_file``, only while that file exists (so that another process decides)."""

    delay: float = Param(0.0, help="Seconds to wait before the reply starts.")
    hold_file: str = Param("", help="Wait, up to ``delay``, only while this file exists.")

    def stream(
        self, messages: Sequence[ChatMessage], options: GenerationOptions | None = None
    ) -> Iterator[LLMStreamItem]:
        if not self.hold_file:
            time.sleep(self.delay)
        deadline = time.monotonic() + self.delay
        while self.hold_file and Path(self.hold_file).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        yield from super().stream(messages, options)
