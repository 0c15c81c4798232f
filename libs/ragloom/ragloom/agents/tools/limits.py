"""Bounds on what goes into a tool call and what comes out of it, plugins' tools included.

What a tool returns is untrusted (a plugin's bug, or content a planted document steered):
:func:`bound_result` makes any return value a :class:`ToolResult` the agents can use,
with its text cut to a limit (saying so) and its types checked.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from typing import Any

from ragloom.agents.tools.base import ToolError, ToolResult
from ragloom.llms.base import Usage
from ragloom.schema import Chunk, RetrievedChunk

__all__ = ["ToolLimits", "bound_result", "cut_text", "refuse_input"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolLimits:
    """The bounds of one tool call.

    ``input_chars``: the raw input an agent wrote, after ReWOO pasted earlier evidence in
    (about the default model's whole context); a longer one is refused. ``content_chars``:
    a result's text, cut past it (a ReAct observation keeps 500 tokens, about 2,000
    characters, of it anyway). ``error_chars``: an error's message, cut past it.
    ``sources``: the passages a result may cite, the best first; the rest are dropped
    (``docsearch`` returns at most 10). ``source_chars``: a passage's text and its file's
    name; a passage past it is dropped (cut, its offsets would cite the wrong span). Well
    above an index's own chunks (32 characters per token of chunk size, at most).
    """

    input_chars: int = 16_000
    content_chars: int = 8_000
    error_chars: int = 2_000
    sources: int = 20
    source_chars: int = 100_000


def cut_text(text: str, limit: int, what: str) -> str:
    """``text`` within ``limit`` characters, ending with a note of the cut if it was cut."""
    if len(text) <= limit:
        return text
    note = f" [… cut: the {what} had {len(text):,} characters, the limit is {limit:,}]"
    if len(note) >= limit:  # a limit too small for the note: the text alone, cut
        return text[:limit]
    return text[: limit - len(note)] + note


def refuse_input(name: str, tool_input: Any, limits: ToolLimits) -> ToolResult | None:
    """The failure for an input past the limits, or ``None`` when it may run."""
    if not isinstance(tool_input, str):
        return ToolResult.failure("invalid_arguments", f"the input of {name} must be text")
    if len(tool_input) > limits.input_chars:
        return ToolResult.failure(
            "input_too_long",
            f"the input of {name} has {len(tool_input):,} characters; tool inputs are "
            f"limited to {limits.input_chars:,}",
        )
    return None


def _invalid(name: str, problem: str) -> ToolResult:
    logger.warning("tool %s returned an invalid result: %s", name, problem)
    return ToolResult.failure("invalid_result", f"{name} returned an invalid result: {problem}")


def _bound_error(name: str, result: ToolResult, limits: ToolLimits) -> ToolResult:
    error = result.error
    if not (
        isinstance(error, ToolError)
        and isinstance(error.code, str)
        and error.code
        and isinstance(error.message, str)
    ):
        return _invalid(name, "an error needs a code and a message, both text")
    code = error.code[:64]
    message = cut_text(error.message, limits.error_chars, "error message")
    if code == error.code and message == error.message and isinstance(error.retryable, bool):
        return result
    return replace(result, error=ToolError(code, message, bool(error.retryable)))


def bound_result(name: str, result: Any, limits: ToolLimits) -> ToolResult:
    """``result`` of tool ``name`` as a valid :class:`ToolResult` within ``limits``.

    A value of the wrong type becomes an ``invalid_result`` failure; text past its limit
    is cut with a note saying so; sources past their limit are dropped, the first kept.
    Idempotent: a bounded result comes back unchanged.
    """
    if not isinstance(result, ToolResult):
        return _invalid(name, f"a {type(result).__name__}, not a ToolResult")
    if result.error is not None:
        return _bound_error(name, result, limits)
    if not isinstance(result.content, str):
        return _invalid(name, f"its content is a {type(result.content).__name__}, not text")
    if not isinstance(result.sources, list | tuple):
        return _invalid(name, "its sources must be a list of RetrievedChunk")
    for source in result.sources:
        if (problem := _source_problem(source)) is not None:
            return _invalid(name, problem)
    if result.usage is not None and not isinstance(result.usage, Usage):
        return _invalid(name, "its usage must be a ragloom.llms.base.Usage")
    content = cut_text(result.content, limits.content_chars, "result")
    sources = [s for s in result.sources if _within(s.chunk, limits.source_chars)]
    if len(sources) < len(result.sources):
        logger.warning(
            "tool %s returned %d sources longer than %d characters; they are dropped",
            name,
            len(result.sources) - len(sources),
            limits.source_chars,
        )
    if len(sources) > limits.sources:
        logger.warning(
            "tool %s returned %d sources; the first %d are kept",
            name,
            len(sources),
            limits.sources,
        )
        sources = sources[: limits.sources]
    if content is result.content and len(sources) == len(result.sources):
        return result
    return replace(result, content=content, sources=sources)


def _source_problem(source: Any) -> str | None:
    """What makes ``source`` unfit to cite, or ``None``: each field is read later (the
    evidence ledger, citations, the stored conversation), where a wrong type would fail
    the whole answer rather than this one call."""
    if not isinstance(source, RetrievedChunk):
        return "its sources must be RetrievedChunk objects"
    chunk = source.chunk
    if not isinstance(chunk, Chunk):
        return "a source's chunk must be a ragloom.schema.Chunk"
    if not all(isinstance(v, str) for v in (chunk.id, chunk.text, chunk.source_id)):
        return "a source's chunk needs text for its id, its text and its source id"
    if not isinstance(chunk.source_name, str):
        return "a source's chunk needs text for its file's name"
    if not (chunk.page is None or _whole(chunk.page)) or not (
        _whole(chunk.start) and _whole(chunk.end)
    ):
        return "a source's page, start and end must be whole numbers"
    if not _number(source.score) or not isinstance(source.found_by, dict):
        return "a source needs a finite score and a found_by mapping"
    if not all(isinstance(k, str) and _number(v) for k, v in source.found_by.items()):
        return "a source's found_by maps retriever names to finite scores"
    return None


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _within(chunk: Chunk, limit: int) -> bool:
    return len(chunk.text) <= limit and len(chunk.source_name) <= limit
