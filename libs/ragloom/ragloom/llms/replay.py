"""A chat LLM that replays given replies: for tests of parsers, control flow and plugins.

It loads nothing and answers instantly, recording every prompt and its options so a test
can check what the model was shown. Token counts are words.
"""

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
    ToolCallRequest,
    Usage,
)

__all__ = ["ReplayLLM"]

Reply = str | tuple[ToolCallRequest, ...]


class ReplayLLM(ChatLLM):
    """Replies with ``replies`` in turn (each used once) and records every call.

    When one reply is left it is repeated, unless ``repeat_last`` is off: then a call with
    no reply left fails, so a test states every call it expects. A reply that is a tuple
    of :class:`~ragloom.llms.base.ToolCallRequest` comes back as native tool calls.
    """

    replies: list[Reply] = Param(
        default_callback=lambda _: ["The documents say so [1]."], help="Replies, in order."
    )
    repeat_last: bool = Param(True, help="Repeat the last reply instead of running out.")
    window: int = Param(4096, help="The context window to report.")
    grammar: bool = Param(False, help="What supports_grammar reports.")
    native: bool = Param(False, help="What supports_tool_calls reports.")
    structured: bool = Param(False, help="What supports_json_schema reports.")
    prefill: bool = Param(True, help="What continues_assistant_turn reports.")
    prompts: list[list[ChatMessage]] = Param(
        default_callback=lambda _: [], help="Every prompt sent, in order."
    )
    options_seen: list[GenerationOptions | None] = Param(
        default_callback=lambda _: [], help="The options of every call, in order."
    )

    @property
    def supports_grammar(self) -> bool:
        return self.grammar

    @property
    def supports_json_schema(self) -> bool:
        return self.structured

    @property
    def continues_assistant_turn(self) -> bool:
        return self.prefill

    @property
    def supports_tool_calls(self) -> bool:
        return self.native

    @property
    def context_window(self) -> int:
        return self.window

    def count_tokens(self, text: str) -> int:
        return max(1, len(text.split()))

    def _next_reply(self) -> Reply:
        if not self.replies:
            raise AssertionError("the replay LLM ran out of replies")
        if len(self.replies) == 1 and self.repeat_last:
            return self.replies[0]
        return self.replies.pop(0)

    def stream(
        self, messages: Sequence[ChatMessage], options: GenerationOptions | None = None
    ) -> Iterator[LLMStreamItem]:
        timer = CallTimer()
        self.prompts.append(list(messages))
        self.options_seen.append(options)
        reply = self._next_reply()
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
