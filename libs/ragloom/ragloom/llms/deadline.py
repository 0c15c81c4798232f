"""An LLM whose calls stop waiting for their turn at an answer's deadline.

One local model answers one call at a time, and an endpoint takes a few at once; the
others wait in line (:mod:`ragloom.llms.fair_lock`). Nothing in that line knew the answer a
call belongs to must end by a deadline: behind a few long answers, a question waited for
minutes without a word, then began after its time was up, only to be cut short at once.
:class:`DeadlineLLM` gives every call of one answer that answer's deadline as
``GenerationOptions.wait_until``, which the model honours while it waits; the app wraps the
LLMs of every answer it writes, so reasoning modes (plugins' included) need not pass it on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

from theflow import Param

from ragloom.llms.base import ChatLLM, ChatMessage, GenerationOptions, LLMStreamItem

__all__ = ["DeadlineLLM"]


class DeadlineLLM(ChatLLM):
    """``llm``'s calls, none of which waits for its turn past ``deadline``.

    ``deadline`` is a :func:`time.monotonic` time; a call's own ``wait_until``, if sooner,
    still holds. Everything else (the context window, the tokenizer, what the model
    supports, any attribute of its own class) is ``llm``'s; an ``isinstance`` test of the
    model's class is made on ``llm``.
    """

    llm: ChatLLM = Param(help="The LLM that answers.")
    deadline: float = Param(help="A time.monotonic() time: the answer's deadline.")

    def __getattr__(self, name: str) -> Any:
        # Only what this class lacks comes here: a model's own settings and properties
        # (a plugin's LLM), which a mode may read off the LLM it was given.
        if name.startswith("_") or name in ("llm", "deadline"):
            raise AttributeError(name)  # theflow's internals, or not set yet
        return getattr(self.llm, name)

    @property
    def context_window(self) -> int:
        return self.llm.context_window

    @property
    def name(self) -> str:
        return self.llm.name

    @property
    def supports_grammar(self) -> bool:
        return self.llm.supports_grammar

    @property
    def supports_json_schema(self) -> bool:
        return self.llm.supports_json_schema

    @property
    def supports_tool_calls(self) -> bool:
        return self.llm.supports_tool_calls

    @property
    def continues_assistant_turn(self) -> bool:
        return self.llm.continues_assistant_turn

    @property
    def in_line(self) -> int:
        """Calls the model is answering or that wait their turn (where it says)."""
        return int(getattr(self.llm, "in_line", 0))

    def count_tokens(self, text: str) -> int:
        return self.llm.count_tokens(text)

    def warm_up(self) -> None:
        self.llm.warm_up()

    def stream(
        self, messages: Sequence[ChatMessage], options: GenerationOptions | None = None
    ) -> Iterator[LLMStreamItem]:
        """``llm``'s stream, with ``wait_until`` no later than ``deadline``."""
        options = options or GenerationOptions()
        if options.wait_until is None or options.wait_until > self.deadline:
            options = dataclasses.replace(options, wait_until=self.deadline)
        return self.llm.stream(messages, options)
