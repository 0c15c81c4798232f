"""Whether an event a reasoning mode yielded can be used: :func:`event_problem`.

A plugin's mode may yield anything. Each event is read later by the answer's collector,
the UI, the stored conversation and ``ask --json``; one of the wrong shape would fail
there, after the question's turn was stored, with an error that names nothing useful.
Checked as it comes, it ends the answer at once, saying which field was wrong.
"""

from __future__ import annotations

import math
from typing import Any, get_args

from ragloom.citation import Citation
from ragloom.events import (
    AnswerDelta,
    AnswerRevised,
    CitationsFound,
    Event,
    GroundingChecked,
    LLMCallFinished,
    PlanCreated,
    PlanItem,
    StepFinished,
    StepStarted,
)
from ragloom.grounding_report import GroundingReport
from ragloom.llms.base import Usage

__all__ = ["event_problem"]

_EVENT_TYPES = get_args(Event)


def event_problem(event: Any) -> str | None:
    """What makes ``event`` unusable, in words naming the field; ``None`` if it is fine."""
    kind = type(event).__name__
    if not isinstance(event, _EVENT_TYPES):
        return f"a {kind} is not one of ragloom.events' Event types"
    if isinstance(event, AnswerDelta | AnswerRevised) and not isinstance(event.text, str):
        return f"{kind}.text must be text"
    if isinstance(event, CitationsFound) and not (
        isinstance(event.citations, list | tuple)
        and all(isinstance(c, Citation) for c in event.citations)
    ):
        return "CitationsFound.citations must be a list of ragloom.events.Citation"
    if isinstance(event, GroundingChecked) and not isinstance(event.report, GroundingReport):
        return "GroundingChecked.report must be a GroundingReport"
    if isinstance(event, StepStarted | StepFinished) and not (
        isinstance(event.name, str) and isinstance(event.label, str)
    ):
        return f"{kind}.name and .label must be text"
    if isinstance(event, StepFinished):
        seconds = event.seconds
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            return "StepFinished.seconds must be a number"
        if not (math.isfinite(seconds) and seconds >= 0):
            return "StepFinished.seconds must be finite and not negative"
        if not isinstance(event.error, str | None):
            return "StepFinished.error must be None or text"
    if isinstance(event, LLMCallFinished) and not (
        isinstance(event.purpose, str) and isinstance(event.usage, Usage)
    ):
        return "LLMCallFinished needs a purpose in text and a ragloom.llms.base.Usage"
    if isinstance(event, PlanCreated) and not (
        isinstance(event.steps, list | tuple)
        and all(isinstance(step, PlanItem) for step in event.steps)
        and isinstance(event.raw, str)
    ):
        return "PlanCreated needs steps that are PlanItem objects and its raw plan in text"
    return None
