"""The one chat interface every LLM in Ragloom implements.

Messages go in; text (or a stream of text) comes out, with the tokens used and the wall time
of every call. Options cover stop sequences, temperature, max tokens and an optional output
constraint (a GBNF grammar or a JSON schema).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ragloom.base import BaseComponent

__all__ = [
    "CallTimer",
    "ChatLLM",
    "ChatMessage",
    "GenerationOptions",
    "LLMBusyError",
    "LLMError",
    "LLMResult",
    "LLMStreamItem",
    "ToolCallRequest",
    "ToolSpec",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]
# Characters of the scripts written without spaces: CJK ideographs (with extensions and
# compatibility forms), CJK punctuation, Hiragana, Katakana, Hangul and full-width forms.
_WIDE_SCRIPTS = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u30ff\u3130-\u318f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
    "\U00020000-\U0003134f]"
)


class LLMError(RuntimeError):
    """An LLM call failed (the model could not load, the endpoint refused, ...).

    ``transient``: the same call may succeed if made again: the endpoint could not be
    reached, did not answer in time, or answered that it should be tried again (408, 409,
    429, 5xx: what the ``openai`` package retries). Anything else (a prompt past the
    context, a request refused, a model that cannot load) fails the same way every time.
    """

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class LLMBusyError(LLMError):
    """A call's turn did not come in time (the local model, or an endpoint's request
    slots, busy with other calls until its limit): nothing of it was sent to the model."""


@dataclass(frozen=True)
class ToolSpec:
    """A function a model may call natively: its name, description and argument schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCallRequest:
    """A call the model asked for: the endpoint's call id, the tool, its JSON arguments."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatMessage:
    """One turn of a conversation.

    An assistant turn may carry the ``tool_calls`` it asked for; a ``tool`` turn answers
    one of them (``tool_call_id``), as in OpenAI's native tool calling.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCallRequest, ...] = ()
    tool_call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The OpenAI-style mapping (``{"role", "content"}`` plus tool-call fields if any)."""
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        return data


@dataclass(frozen=True)
class GenerationOptions:
    """How to generate: at most one of ``grammar`` (GBNF) and ``json_schema`` may be set.

    ``continue_assistant``: the last message is an unfinished assistant turn that the model
    continues, instead of starting a new turn (ReAct keeps its scratchpad there).
    ``tools``: functions the model may call natively (where :attr:`ChatLLM.supports_tool_calls`);
    ``tool_choice`` is ``"auto"`` (default), ``"none"``, ``"required"`` or a tool's name.
    ``wait_until``: a :func:`time.monotonic` time (an answer's deadline) past which the call
    does not wait for its turn (the local model, an endpoint's request slots) but fails
    with :class:`LLMBusyError` (:meth:`turn_timeout`).
    """

    max_tokens: int = 512
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    grammar: str | None = None
    json_schema: dict[str, Any] | None = None
    continue_assistant: bool = False
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str | None = None
    wait_until: float | None = None

    def __post_init__(self) -> None:
        if self.grammar is not None and self.json_schema is not None:
            raise ValueError("give either a grammar or a JSON schema, not both")
        if self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")

    def turn_timeout(self, limit: float | None = None) -> float | None:
        """Seconds the call may wait for its turn: ``limit`` (``None``: no limit) or less,
        to stop at ``wait_until``; never negative."""
        if self.wait_until is None:
            return limit
        left = max(self.wait_until - time.monotonic(), 0.0)
        return left if limit is None else min(limit, left)


@dataclass(frozen=True)
class Usage:
    """Tokens and time of one call (or a total over several).

    ``prompt_tokens`` counts the tokens sent; ``prompt_tokens_evaluated`` those the model
    actually had to evaluate (fewer when llama.cpp reuses a cached prefix; equal to
    ``prompt_tokens`` where the endpoint does not say).
    """

    prompt_tokens: int = 0
    prompt_tokens_evaluated: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    first_token_seconds: float | None = None

    @staticmethod
    def total(usages: Iterable[Usage]) -> Usage:
        """The sum of several calls' usage (``first_token_seconds`` is dropped)."""
        items = list(usages)
        return Usage(
            prompt_tokens=sum(u.prompt_tokens for u in items),
            prompt_tokens_evaluated=sum(u.prompt_tokens_evaluated for u in items),
            completion_tokens=sum(u.completion_tokens for u in items),
            seconds=sum(u.seconds for u in items),
        )


@dataclass(frozen=True)
class LLMResult:
    """The whole output of one call."""

    text: str
    usage: Usage
    finish_reason: str = "stop"
    tool_calls: tuple[ToolCallRequest, ...] = ()


@dataclass(frozen=True)
class LLMStreamItem:
    """One item of a stream: a piece of text; the last item also carries the result."""

    text: str
    result: LLMResult | None = None


@dataclass
class CallTimer:
    """Measures a call: wall time and the time to its first token."""

    started: float = field(default_factory=time.perf_counter)
    first_token: float | None = None

    def mark(self) -> None:
        """Record the first token's time (later calls change nothing)."""
        if self.first_token is None:
            self.first_token = time.perf_counter() - self.started

    def elapsed(self) -> float:
        """Seconds since the call started."""
        return time.perf_counter() - self.started


class ChatLLM(BaseComponent):
    """A chat model. Subclasses implement :meth:`stream`; :meth:`run` collects it.

    ``context_window`` is the number of tokens a prompt plus its answer may use, so callers
    can budget evidence; :meth:`count_tokens` counts with the model's own tokenizer where
    it has one.
    """

    @property
    def context_window(self) -> int:
        """Tokens of prompt plus completion the model accepts."""
        return 4096

    @property
    def name(self) -> str:
        """A short human-readable name of the model (for logs and the UI)."""
        return type(self).__name__

    @property
    def supports_grammar(self) -> bool:
        """Whether :class:`GenerationOptions` ``grammar`` (GBNF) is honoured."""
        return False

    @property
    def supports_json_schema(self) -> bool:
        """Whether :class:`GenerationOptions` ``json_schema`` constrains the output."""
        return False

    @property
    def supports_tool_calls(self) -> bool:
        """Whether :class:`GenerationOptions` ``tools`` are offered to the model natively."""
        return False

    @property
    def continues_assistant_turn(self) -> bool:
        """Whether ``continue_assistant`` carries on the last assistant message (a prefill);
        where not, the model answers that message in a turn of its own."""
        return False

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text``; the default estimates 4 characters a token, but a token a
        character for scripts written without spaces (Chinese, Japanese kana, Korean
        Hangul), whose tokenizers give about one token a character, or more: at 4 a
        token, 8 Chinese passages were estimated at 2,542 tokens and were 9,774."""
        wide = len(_WIDE_SCRIPTS.findall(text))
        return max(1, wide + (len(text) - wide) // 4)

    def warm_up(self) -> None:
        """Load now what the first request would load (a local model, a client's imports),
        so that it waits for none of it; sends the model no prompt. The default counts a
        token, which loads a model whose tokenizer is its own."""
        self.count_tokens("warm up")

    def stream(
        self, messages: Sequence[ChatMessage], options: GenerationOptions | None = None
    ) -> Iterator[LLMStreamItem]:
        """Generate a reply piece by piece; the last item carries the :class:`LLMResult`."""
        raise NotImplementedError(f"{type(self).__name__} must implement stream()")

    def run(
        self, messages: Sequence[ChatMessage], options: GenerationOptions | None = None
    ) -> LLMResult:
        """Generate a whole reply."""
        for item in self.stream(messages, options):
            if item.result is not None:
                return item.result
        raise LLMError(f"{self.name} ended its stream without a result")
