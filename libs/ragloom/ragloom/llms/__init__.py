"""Chat LLMs: the interface and its implementations (llama.cpp, OpenAI-compatible).

The implementations are exported lazily (module ``__getattr__``): importing
``ragloom.llms`` must not import ``llama_cpp`` or ``openai``, which are heavy and optional.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragloom.lazy import lazy_exports
from ragloom.llms.base import (
    ChatLLM,
    ChatMessage,
    GenerationOptions,
    LLMBusyError,
    LLMError,
    LLMResult,
    LLMStreamItem,
    Usage,
)

if TYPE_CHECKING:
    from ragloom.llms.bundled import ModelIntegrityError
    from ragloom.llms.llamacpp import LlamaCppChat
    from ragloom.llms.openai_compat import OpenAIChat

__all__ = [
    "ChatLLM",
    "ChatMessage",
    "GenerationOptions",
    "LLMBusyError",
    "LLMError",
    "LLMResult",
    "LLMStreamItem",
    "LlamaCppChat",
    "ModelIntegrityError",
    "OpenAIChat",
    "Usage",
]

_LAZY = {
    "LlamaCppChat": "ragloom.llms.llamacpp",
    "OpenAIChat": "ragloom.llms.openai_compat",
    "ModelIntegrityError": "ragloom.llms.bundled",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
