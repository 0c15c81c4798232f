"""A chat LLM that replays scripted replies: for unit tests of parsers and control flow."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from theflow import Param

from ragloom.llms.base import (
    CallTimer,
    ChatLLM,
    ChatMessage,
    GenerationOptions,
    LLMResult,
    LLMStreamItem,
    Usage,
)


class ScriptedLLM(ChatLLM):
    """Replies with the given texts in turn and records every prompt it was sent.

    A reply that is a tuple of :class:`~ragloom.llms.base.ToolCallRequest` is returned as
    native tool calls (with ``native=True``, the LLM says it supports them).
    """

    replies: list[str] = Param(default_callback=lambda _: [], help="Replies, in order.")
    window: int = Param(4096, help="The context window to report.")
    prompts: list[list[ChatMessage]] = Param(
        default_callback=lambda _: [], help="Every prompt sent, in order."
    )
    options_seen: list[GenerationOptions | None] = Param(
        default_callback=lambda _: [], help="The options of every call, in order."
    )
    grammar: bool = Param(False, help="What supports_grammar reports.")
    native: bool = Param(False, help="What supports_tool_calls reports.")

    @property
    def supports_grammar(self) -> bool:
        return self.grammar

    @property
    def supports_tool_calls(self) -> bool:
        return self.native

    @property
    def context_window(self) -> int:
        return self.window

    def count_tokens(self, text: str) -> int:
        return max(1, len(text.split()))

    def stream(
        self, messages: Sequence[ChatMessage], options: GenerationOptions | None = None
    ) -> Iterator[LLMStreamItem]:
        timer = CallTimer()
        self.prompts.append(list(messages))
        self.options_seen.append(options)
        if not self.replies:
            raise AssertionError("the scripted LLM ran out of replies")
        reply = self.replies.pop(0)
        if isinstance(reply, tuple):  # native tool calls, no text
            usage = Usage(1, 1, 1, timer.elapsed(), None)
            yield LLMStreamItem("", LLMResult("", usage, "tool_calls", reply))
            return
        words = reply.split(" ")
        for position, word in enumerate(words):
            timer.mark()
            yield LLMStreamItem(word if position == 0 else " " + word)
        prompt = sum(self.count_tokens(m.content) for m in messages)
        usage = Usage(prompt, prompt, len(words), timer.elapsed(), timer.first_token)
        yield LLMStreamItem("", LLMResult(reply, usage))
