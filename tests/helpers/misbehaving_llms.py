"""LLMs that misbehave on purpose: one that writes slowly, one that fails.

:class:`SlowLLM` is for deadlines and for work served meanwhile; :class:`FailingLLM` for
what a user is told when the model fails with a message that names its endpoint.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from theflow import Param

from ragloom.llms.base import ChatMessage, GenerationOptions, LLMError, LLMStreamItem
from ragloom.llms.replay import ReplayLLM

__all__ = ["FailingLLM", "SlowLLM"]


class SlowLLM(ReplayLLM):
    """A :class:`~ragloom.llms.replay.ReplayLLM` that sleeps ``delay`` seconds before each
    word it streams (sleeping, as a model waiting on its server does: the GIL is free);
    ``streamed`` counts the words it wrote."""

    delay: float = Param(0.05, help="Seconds before each streamed word.")
    streamed: list = Param(default_callback=lambda _: [], help="Every word streamed.")

    def stream(
        self, messages: Sequence[ChatMessage], options: GenerationOptions | None = None
    ) -> Iterator[LLMStreamItem]:
        for item in super().stream(messages, options):
            if item.text:
                time.sleep(self.delay)
                self.streamed.append(item.text)
            yield item


class FailingLLM(ReplayLLM):
    """Fails every call after streaming ``words_first`` words of its reply: with an
    :class:`LLMError` naming ``message`` (``unexpected``: a ``RuntimeError`` instead)."""

    message: str = Param("cannot reach http://10.9.8.7:8000/v1: refused", help="The error.")
    unexpected: bool = Param(False, help="Raise a RuntimeError, not an LLMError.")
    words_first: int = Param(0, help="Words streamed before the failure.")

    def stream(
        self, messages: Sequence[ChatMessage], options: GenerationOptions | None = None
    ) -> Iterator[LLMStreamItem]:
        for words, item in enumerate(super().stream(messages, options)):
            if words >= self.words_first:
                break
            yield item
        raise (RuntimeError if self.unexpected else LLMError)(self.message)
