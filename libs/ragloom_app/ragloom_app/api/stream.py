"""The typed events of an answer as server-sent events (``text/event-stream``).

Each event is one SSE message whose ``event:`` line names its type and whose ``data:``
line is its JSON: the same events the UI renders, in the same order.

========================  ===============================================================
``event:``                ``data``
========================  ===============================================================
``answer_delta``          ``{"text": ...}``: the next piece of the answer
``answer_revised``        ``{"text": ...}``: the whole answer, replacing what came before
``citations``             ``{"citations": [...]}``: the passages the answer cites
``grounding``             the grounding report (per sentence: supported, by which passage)
``step``                  a step started or finished (``ask --json``'s ``steps`` entries)
``plan``                  a plan's steps (ReWOO)
``usage``                 one LLM call's tokens and seconds
``done``                  the whole answer, as the JSON response would have it; last
``error``                 the answer could not be made: ``{"error": {...}}``, as a response's
========================  ===============================================================
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ragloom.events import (
    AnswerDelta,
    AnswerRevised,
    CitationsFound,
    Event,
    GroundingChecked,
    LLMCallFinished,
    PlanCreated,
    StepFinished,
    StepStarted,
)

__all__ = ["SSE_MEDIA_TYPE", "event_payload", "sse_message"]

SSE_MEDIA_TYPE = "text/event-stream"


def event_payload(event: Event) -> tuple[str, dict[str, Any]]:
    """The SSE event name and JSON object of a typed event."""
    if isinstance(event, AnswerDelta):
        return "answer_delta", {"text": event.text}
    if isinstance(event, AnswerRevised):
        return "answer_revised", {"text": event.text}
    if isinstance(event, CitationsFound):
        return "citations", {"citations": [c.to_dict() for c in event.citations]}
    if isinstance(event, GroundingChecked):
        return "grounding", event.report.to_dict()
    if isinstance(event, PlanCreated):
        return "plan", event.to_dict()
    if isinstance(event, LLMCallFinished):
        return "usage", event.to_dict()
    if isinstance(event, StepStarted | StepFinished):
        return "step", event.to_dict()
    raise TypeError(f"not an answer event: {type(event).__name__}")


def sse_message(name: str, data: Mapping[str, Any]) -> str:
    """One SSE message; JSON never holds a raw newline, so ``data`` is one line."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"
