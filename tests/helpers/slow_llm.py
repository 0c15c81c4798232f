"""A replay LLM that takes its time: to keep an answer running while a test does more."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from theflow import Param

from ragloom.llms.base import ChatMessage, GenerationOptions, LLMStreamItem
from ragloom.llms.replay import ReplayLLM

__all__ = ["SlowLLM"]


class SlowLLM(ReplayLLM):
    """A :class:`~ragloom.llms.replay.ReplayLLM` that waits ``delay`` seconds per call."""

    delay: float = Param(0.0, help="Seconds to wait before the reply starts.")

    def stream(
        self, messages: Sequence[ChatMessage], options: GenerationOptions | None = None
    ) -> Iterator[LLMStreamItem]:
        time.sleep(self.delay)
        yield from super().stream(messages, options)
