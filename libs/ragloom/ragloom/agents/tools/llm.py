"""The ``llm`` tool: asks the LLM directly (a real call, for reasoning over given text)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from ragloom.agents.tools.base import BaseTool, ToolContext, ToolResult
from ragloom.llms.base import ChatLLM, ChatMessage, GenerationOptions, LLMError

__all__ = ["LLMTool"]


class LLMTool(BaseTool):
    """Answers a self-contained question or instruction with the LLM, without tools."""

    class Arguments(BaseModel):
        """The prompt."""

        prompt: str = Field(min_length=1, description="A self-contained question or instruction.")

    name: ClassVar[str] = "llm"
    description: ClassVar[str] = (
        "Ask a language model a self-contained question, e.g. to combine or reformulate "
        "facts found earlier. Input: the full question with every fact it needs."
    )

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
            result = self.llm.run(messages, GenerationOptions(max_tokens=self.max_tokens))
        except LLMError as exc:
            return ToolResult.failure("llm_failed", str(exc), retryable=True)
        return ToolResult(content=result.text.strip(), usage=result.usage)
