"""The warning the chat shows for a failed step.

What a step reads while it runs is its mode's choice (``StepStarted.label``, drawn by
:func:`ragloom_app.ui.render.step_status`); only the page's own steps are known here.
"""

from __future__ import annotations

from ragloom.events import StepFinished

__all__ = ["step_warning"]


def step_warning(step: StepFinished) -> str:
    """What a failed step's warning says: the page's own steps (the mode failed, the
    deadline, a model too busy, an index left out) have whole sentences; a mode's are
    named first."""
    if step.name in ("error", "deadline", "busy") or step.name.startswith("index:"):
        return str(step.error)
    return f"{step.name} failed: {step.error}"
