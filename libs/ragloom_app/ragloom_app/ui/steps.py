"""How the chat names the steps of a mode while it answers, and the warnings of failed ones.

The built-in modes' step names (``retrieve``, ``E2:docsearch``, ``Q1``...) get words of
their own; any other name is shown as it is, made readable.
"""

from __future__ import annotations

import re

from ragloom.events import StepFinished

__all__ = ["step_label", "step_warning"]

_STEP_LABELS = {
    "retrieve": "Searching the documents",
    "answer": "Writing the answer",
    "solve": "Writing the answer",
    "plan": "Planning the tool calls",
    "work": "Running the plan",
    "split": "Splitting the question",
    "final": "Writing what was found",
}
_NUMBERED_STEP = re.compile(r"^(?:E(\d+)|step(\d+)|think(\d+)|Q(\d+))(?::(\w+))?$")


def step_warning(step: StepFinished) -> str:
    """What a failed step's warning says: the page's own steps (the mode failed, the
    deadline, an index left out) have whole sentences; a mode's are named first."""
    if step.name in ("error", "deadline") or step.name.startswith("index:"):
        return str(step.error)
    return f"{step.name} failed: {step.error}"


def step_label(name: str) -> str:
    """A readable status for a step name such as ``retrieve``, ``E2:docsearch`` or ``Q1``."""
    if name in _STEP_LABELS:
        return _STEP_LABELS[name]
    if match := _NUMBERED_STEP.match(name):
        planned, acted, thought, part, tool = match.groups()
        if planned:
            return f"Running #E{planned} ({tool})"
        if acted:
            return f"Step {acted}: calling {tool}"
        if thought:
            return f"Thinking (step {thought})"
        return f"Answering sub-question {part}"
    return name.replace("_", " ").replace(":", ": ").capitalize()
