"""The ``llm`` tool: asks the LLM directly (a real call, for reasoning over given text)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from ragloom.agents.tools.base import BaseTool, ToolContext, ToolResult
from ragloom.agents.tools.cancel import raise_if_cancelled
from ragloom.llms.base import ChatLLM, ChatMessage, GenerationOptions, LLMError, LLMResult

__all__ = ["LLMTool"]


class LLMTool(BaseTool):
    """Answers a self-contained question or instruction with the LLM, without tools.

    It uses the request's LLM, so it runs in the agent's process (``sandboxed = False``);
    it streams the reply and, told to stop, closes the stream (which frees the model).
    """

    class Arguments(BaseModel):
        """The prompt."""

        prompt: str = Field(min_length=1, description="A self-contained question or instruction.")

    name: ClassVar[str] = "llm"
    description: ClassVar[str] = (
        "Ask a language model a self-contained question, e.g. to combine or reformulate "
        "facts found earlier. Input: the full question with every fact it needs."
    )
    sandboxed: ClassVar[bool] = False

    def __init__(self, llm: ChatLLM, *, max_tokens: int = 200) -> None:
        self.llm = llm
        self.max_tokens = max_tokens

    @classmethod
    def from_context(cls, context: ToolContext) -> LLMTool:
        return cls(context.llm)

    def run(self, arguments: BaseModel) -> ToolResult:
        assert isinstance(arguments, LLMTool.Arguments)
        messages = [
            ChatMessage("system", "Answer briefly and precisely."),
            ChatMessage("user", arguments.prompt),
        ]
        try:
            result = self._generate(messages)
        except LLMError as exc:
            # A prompt past the context fails the same way every time: retry only what
            # the LLM says may pass (an endpoint unreachable, busy, or failing for now).
            return ToolResult.failure("llm_failed", str(exc), retryable=exc.transient)
        return ToolResult(content=result.text.strip(), usage=result.usage)

    def _generate(self, messages: list[ChatMessage]) -> LLMResult:
        stream = self.llm.stream(messages, GenerationOptions(max_tokens=self.max_tokens))
        try:
            for item in stream:
                raise_if_cancelled()
                if item.result is not None:
                    return item.result
        finally:
            close = getattr(stream, "close", None)  # a generator: ends the generation
            if close is not None:
                close()
        raise LLMError(f"{self.llm.name} ended its stream without a result")
