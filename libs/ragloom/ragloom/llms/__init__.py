"""Chat LLMs: the interface and its implementations (llama.cpp, OpenAI-compatible)."""

from ragloom.llms.base import (
    ChatLLM,
    ChatMessage,
    GenerationOptions,
    LLMError,
    LLMResult,
    LLMStreamItem,
    Usage,
)

__all__ = [
    "ChatLLM",
    "ChatMessage",
    "GenerationOptions",
    "LLMError",
    "LLMResult",
    "LLMStreamItem",
    "Usage",
]
