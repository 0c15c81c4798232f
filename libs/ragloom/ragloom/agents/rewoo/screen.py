"""Screening a valid ReWOO plan before it runs: drop the steps whose inputs cannot work.

Small models pad plans with steps that cannot work, such as ``calculator[#E2]`` where
``#E2`` is a search: the passages pasted in are never an arithmetic expression. Each tool
says what its result is (``result_kind``), which kinds of earlier results its input may
use (``accepts``) and how to check an input (``check_input``); see
:class:`~ragloom.agents.tools.base.BaseTool`. Before anything runs, a step is dropped when

- it refers to a step whose kind of result its tool does not take;
- its input fails the tool's check with every reference to a number filled in with a
  sample number (an input using other text is checked once it is filled in, when the step
  runs: :func:`input_problem`);
- it uses a dropped step.

Nothing is repaired but a search: a repair would have to guess what the planner meant
(which number of which passage), while the solver sees the passages themselves and is told
what was dropped and why. A search that uses a dropped step is the one exception: it is
replaced by a search for what the dropped step was to find (its ``#Plan`` line, or the
question), since more of the right passages is what a padded plan's later searches give
the solver. When the drops leave no search of the documents, a search for the question
is added, so that the answer still comes from the documents.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from ragloom.agents.rewoo.plan import Plan, PlanStep, plan_levels, substitute_evidence
from ragloom.agents.tools.base import BaseTool, ResultKind
from ragloom.agents.tools.limits import cut_text

__all__ = [
    "ADDED_SEARCH_TEXT",
    "MAX_REASON_CHARS",
    "REPAIRED_SEARCH_REASON",
    "SAMPLE_NUMBER",
    "DroppedStep",
    "ScreenedPlan",
    "input_problem",
    "screen_plan",
]

logger = logging.getLogger(__name__)

SAMPLE_NUMBER = "1"
"""What stands for a reference to a number when an input is checked before the plan runs
(checks parse, they do not compute, so ``1 / (#E1 - #E1)`` passes)."""
MAX_REASON_CHARS = 300
"""Characters kept of the reason a tool's check gives (a plugin's may be long)."""
ADDED_SEARCH_TEXT = "Search the documents for the question (no planned search was left)."
"""The description of the search added when the drops left none."""
REPAIRED_SEARCH_REASON = "in place of #E{step}: searches for what {uses} was to find"
"""Why a search replacing one that used a dropped step was added."""

_KIND_WORDS: dict[ResultKind, str] = {
    "passages": "passages found in the documents",
    "number": "a number",
    "text": "text",
}

Tools = Mapping[str, BaseTool] | Mapping[str, type[BaseTool]]


@dataclass(frozen=True)
class DroppedStep:
    """A step that was not run, and why (in words a user understands)."""

    step: PlanStep
    reason: str


@dataclass(frozen=True)
class ScreenedPlan:
    """The steps that run (``plan``), the ones ``dropped``, the ``repaired`` searches that
    replace dropped ones (each with why), and the search ``added`` when none was left."""

    plan: Plan
    dropped: tuple[DroppedStep, ...] = ()
    added: PlanStep | None = None
    repaired: tuple[DroppedStep, ...] = ()


def input_problem(tool: BaseTool | type[BaseTool], text: str) -> str | None:
    """``tool.check_input(text)``, never raising: a check that fails is logged and the
    input let through (the call itself then reports what is wrong); a long reason is cut."""
    try:
        problem = tool.check_input(text)
    except Exception as exc:  # a plugin's checker must not stop the plan
        logger.warning("tool %s: check_input raised %s: %s", tool.name, type(exc).__name__, exc)
        return None
    if problem is None:
        return None
    return cut_text(str(problem), MAX_REASON_CHARS, "reason") or "the tool refused it"


def _kind(step: PlanStep, tools: Tools) -> ResultKind:
    tool = tools.get(step.tool)
    return tool.result_kind if tool is not None else "text"


def _why_dropped(
    step: PlanStep, by_id: Mapping[int, PlanStep], tools: Tools, dropped: Mapping[int, str]
) -> str | None:
    tool = tools.get(step.tool)
    if tool is None:
        return None  # validation refuses unknown tools; the worker reports one anyway
    kinds: dict[int, ResultKind] = {}
    for n in sorted(step.depends_on):
        if n in dropped:
            return f"it uses #E{n}, which is not run"
        if n not in by_id:
            return f"it uses #E{n}, which no step defines"
        kinds[n] = kind = _kind(by_id[n], tools)
        if kind not in tool.accepts:
            words = _KIND_WORDS.get(kind, kind)  # a kind the registry would have refused
            return f"#E{n} gives {words}, which {tool.name} does not take as input"
    if any(kind != "number" for kind in kinds.values()):
        return None  # text is checked once it is known, when the step runs
    sample = substitute_evidence(step.tool_input, dict.fromkeys(kinds, SAMPLE_NUMBER))
    problem = input_problem(tool, sample)
    return f"{tool.name} cannot take this input: {problem}" if problem else None


def _without_references(text: str) -> str:
    """``text`` for a step's input, its ``#E``/``#e`` read as plain words, not as
    references to a step."""
    return re.sub(r"#(?=e\d)", "", text, flags=re.I)


def screen_plan(
    plan: Plan, tools: Tools, question: str, search_tool: str | None = "docsearch"
) -> ScreenedPlan:
    """``plan`` without the steps that cannot work (see the module docstring).

    ``plan`` must be valid (:func:`~ragloom.agents.rewoo.plan.validate_plan`);
    ``search_tool``: the tool of the search added when the drops left none (``None``:
    never add one)."""
    by_id = {step.id: step for step in plan.steps}
    reasons: dict[int, str] = {}
    for level in plan_levels(plan):
        for step in level:
            if (reason := _why_dropped(step, by_id, tools, reasons)) is not None:
                reasons[step.id] = reason
    if not reasons:
        return ScreenedPlan(plan)
    kept = [step for step in plan.steps if step.id not in reasons]
    dropped = tuple(DroppedStep(s, reasons[s.id]) for s in plan.steps if s.id in reasons)
    query = " ".join(_without_references(question).split())
    next_id = max(by_id) + 1
    repaired: list[DroppedStep] = []
    for item in dropped:
        step = item.step
        if step.tool != search_tool or not step.depends_on <= set(reasons):
            continue
        words = [by_id[n].description or query for n in sorted(step.depends_on)]
        text = " ".join(_without_references(" ".join(words)).split())
        if text:
            search = PlanStep(next_id, step.tool, text, step.description)
            uses = ", ".join(f"#E{n}" for n in sorted(step.depends_on))
            reason = REPAIRED_SEARCH_REASON.format(step=step.id, uses=uses)
            repaired.append(DroppedStep(search, reason))
            kept.append(search)
            next_id += 1
    added = None
    if query and search_tool in tools and not any(step.tool == search_tool for step in kept):
        added = PlanStep(next_id, str(search_tool), query, ADDED_SEARCH_TEXT)
        kept.append(added)
    return ScreenedPlan(replace(plan, steps=kept), dropped, added, tuple(repaired))
