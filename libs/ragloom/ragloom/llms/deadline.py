"""An LLM whose calls stop waiting for their turn at an answer's deadline.

One local model answers one call at a time, and an endpoint takes a few at once; the
others wait in line (:mod:`ragloom.llms.fair_lock`). Nothing in that line knew the answer a
call belongs to must end by a deadline: behind a few long answers, a question waited for
minutes without a word, then began after its time was up, only to be cut short at once.
:class:`DeadlineLLM` gives every call of one answer that answer's deadline as
``GenerationOptions.wait_until``, which the model honours while it waits; the app wraps the
LLMs of every answer it writes, so reasoning modes (plugins' included) need not pass it on.

A call the answer cuts short at its deadline is closed before its last item, which
carries its usage; the tokens it took still count. Given :class:`UnfinishedCalls`,
:class:`DeadlineLLM` estimates and keeps the usage of each call closed after it had begun
to answer, for the answer to count. (An answer whose client left keeps no record to count
them in; a call on a thread of the mode's that ends after the answer is not counted.)
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from theflow import Param

from ragloom.llms.base import (
    CallTimer,
    ChatLLM,
    ChatMessage,
    GenerationOptions,
    LLMStreamItem,
    Usage,
)

__all__ = ["DeadlineLLM", "UnfinishedCalls"]

logger = logging.getLogger(__name__)


class UnfinishedCalls:
    """The estimated usage of one answer's LLM calls closed before their last item.

    Estimated, as a server that reports no usage is: the prompt by the model's
    :meth:`~ChatLLM.count_tokens`, the completion one token per streamed piece, the seconds
    until the call ended. A call that ended before its first piece is not counted (it may
    never have had its turn), nor one that raised (its caller saw the failure, and counts
    it if it will). Shared by every :class:`DeadlineLLM` of the answer, whatever
    thread its calls run in.
    """

    def __init__(self) -> None:
        self._usages: list[Usage] = []
        self._lock = threading.Lock()

    def add(self, usage: Usage) -> None:
        """Keep one unfinished call's usage."""
        with self._lock:
            self._usages.append(usage)

    def take(self) -> list[Usage]:
        """The usages kept so far, in the order their calls ended; kept no longer."""
        with self._lock:
            taken, self._usages = self._usages, []
        return taken


class DeadlineLLM(ChatLLM):
    """``llm``'s calls, none of which waits for its turn past ``deadline``.

    ``deadline`` is a :func:`time.monotonic` time; a call's own ``wait_until``, if sooner,
    still holds. Everything else (the context window, the tokenizer, what the model
    supports, any attribute of its own class) is ``llm``'s; an ``isinstance`` test of the
    model's class is made on ``llm``.
    """

    llm: ChatLLM = Param(help="The LLM that answers.")
    deadline: float = Param(help="A time.monotonic() time: the answer's deadline.")
    unfinished: UnfinishedCalls | None = Param(
        None, help="Where the usage of calls cut short is kept (not kept if None)."
    )

    def __getattr__(self, name: str) -> Any:
        # Only what this class lacks comes here: a model's own settings and properties
        # (a plugin's LLM), which a mode may read off the LLM it was given.
        if name.startswith("_") or name in ("llm", "deadline", "unfinished"):
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
        """``llm``'s stream, with ``wait_until`` no later than ``deadline``; a call closed
        before its last item is kept in :attr:`unfinished`."""
        options = options or GenerationOptions()
        if options.wait_until is None or options.wait_until > self.deadline:
            options = dataclasses.replace(options, wait_until=self.deadline)
        items = self.llm.stream(messages, options)
        if self.unfinished is None:
            return items
        return self._counted(messages, items, self.unfinished)

    def _counted(
        self,
        messages: Sequence[ChatMessage],
        items: Iterator[LLMStreamItem],
        unfinished: UnfinishedCalls,
    ) -> Iterator[LLMStreamItem]:
        timer = CallTimer()
        pieces, finished, cut = 0, False, False
        try:
            for item in items:
                if item.result is not None:
                    finished = True
                elif item.text:
                    timer.mark()
                    pieces += 1
                yield item
        except GeneratorExit:
            # Closed by its caller, who can count nothing more. A call that raised is not
            # counted here: its caller sees the error, and may count it (FullQA's answer
            # step does), so it is not counted twice.
            cut = not finished and pieces > 0
            raise
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()  # now, not when collected: the model stops generating
            if cut:
                unfinished.add(self._estimate(messages, pieces, timer))

    def _estimate(self, messages: Sequence[ChatMessage], pieces: int, timer: CallTimer) -> Usage:
        try:
            prompt = sum(self.llm.count_tokens(m.content) for m in messages)
        except Exception as exc:  # a tokenizer's server away: the base estimate
            logger.warning("cannot count a cut call's prompt tokens: %s", exc)
            prompt = sum(ChatLLM.count_tokens(self.llm, m.content) for m in messages)
        return Usage(prompt, prompt, pieces, timer.elapsed(), timer.first_token)
