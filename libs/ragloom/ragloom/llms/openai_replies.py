"""Reading what an OpenAI-compatible endpoint sent back, shape by shape.

The ``openai`` package builds its reply objects without checking them against the schema,
so a server that answers in another shape (a chunk without ``choices``, a choice that is a
string, a 200 body that is an ``{"error": ...}``) would otherwise surface as a bare
``TypeError`` or ``AttributeError`` deep in Ragloom. Each reader here takes only what it
recognises and raises :class:`~ragloom.llms.base.LLMError` in words for anything else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragloom.llms.base import LLMError, ToolCallRequest

__all__ = ["ChoiceParts", "chunk_parts", "completion_parts", "reported_usage"]

_UNREADABLE = "the endpoint answered in a shape Ragloom cannot read"
_MAX_SHOWN = 200  # characters of a server's own error message quoted in ours


@dataclass(frozen=True)
class ChoiceParts:
    """What one choice of a reply holds: its text (or piece), why it ended, its calls."""

    text: str
    finish_reason: str | None
    tool_calls: tuple[ToolCallRequest, ...] = ()


def chunk_parts(chunk: Any) -> list[ChoiceParts]:
    """The choices of one streamed chunk; none for a chunk that only reports usage."""
    choices = getattr(chunk, "choices", None)
    if choices is None and getattr(chunk, "usage", None) is not None:
        return []  # a usage report, which some servers send without choices
    if not isinstance(choices, list):
        raise _unreadable(chunk, "a streamed piece has no list of choices")
    parts = []
    for choice in choices:
        delta = getattr(choice, "delta", None)
        text = getattr(delta, "content", None) if delta is not None else None
        parts.append(ChoiceParts(_text(text, "a streamed piece"), _finish_reason(choice)))
    return parts


def completion_parts(response: Any) -> ChoiceParts:
    """The first choice of a whole (not streamed) reply, with its tool calls."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise _unreadable(response, "the reply holds no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise _unreadable(response, "its choice holds no message")
    calls = getattr(message, "tool_calls", None) or []
    if not isinstance(calls, list):
        raise _unreadable(response, "its tool calls are not a list")
    return ChoiceParts(
        _text(getattr(message, "content", None), "the reply"),
        _finish_reason(choice),
        tuple(_tool_call(call, i, response) for i, call in enumerate(calls)),
    )


def reported_usage(usage: Any) -> tuple[int, int, int] | None:
    """Prompt, cached prompt and completion tokens a reply reports, or None when it
    reports none or not as counts (then they are estimated: usage is no reason to fail)."""
    if usage is None:
        return None
    details = getattr(usage, "prompt_tokens_details", None)
    counts = (
        getattr(usage, "prompt_tokens", None) or 0,
        getattr(details, "cached_tokens", None) or 0,
        getattr(usage, "completion_tokens", None) or 0,
    )
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
        return None
    return counts


def _tool_call(call: Any, index: int, response: Any) -> ToolCallRequest:
    function = getattr(call, "function", None)
    name = getattr(function, "name", None)
    arguments = getattr(function, "arguments", None) or "{}"
    if not isinstance(name, str) or not name or not isinstance(arguments, str):
        raise _unreadable(response, f"tool call {index + 1} names no function")
    call_id = getattr(call, "id", None)
    if not isinstance(call_id, str) or not call_id:
        call_id = f"call_{index}"  # servers that number no calls: ours, in order
    return ToolCallRequest(call_id, name, arguments)


def _text(content: Any, where: str) -> str:
    if content is None:
        return ""
    if not isinstance(content, str):
        raise LLMError(f"{_UNREADABLE}: {where} holds something other than text")
    return content


def _finish_reason(choice: Any) -> str | None:
    if isinstance(choice, str | int | float | bool) or choice is None:
        raise LLMError(f"{_UNREADABLE}: a choice is a bare value, not an object")
    reason = getattr(choice, "finish_reason", None)
    return reason if isinstance(reason, str) and reason else None


def _unreadable(reply: Any, what: str) -> LLMError:
    """The error for ``reply``, quoting the server's own error message when it sent one."""
    error = getattr(reply, "error", None)
    if isinstance(error, dict):
        error = error.get("message") or error
    if error is not None:
        return LLMError(f"{_UNREADABLE}: it sent an error instead: {str(error)[:_MAX_SHOWN]}")
    return LLMError(f"{_UNREADABLE}: {what}")
