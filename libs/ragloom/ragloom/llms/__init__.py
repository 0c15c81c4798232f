"""Chat LLMs: the interface and its implementations (llama.cpp, OpenAI-compatible).

The implementations are exported lazily (module ``__getattr__``): importing
``ragloom.llms`` must not import ``llama_cpp`` or ``openai``, which are heavy and optional.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ragloom.llms.base import (
    ChatLLM,
    ChatMessage,
    GenerationOptions,
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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
