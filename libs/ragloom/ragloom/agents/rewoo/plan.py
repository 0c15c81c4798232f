"""ReWOO plans: parse the planner's text, validate it, order it, fill in evidence.

A plan is lines like::

    #Plan1: Find the reactor's temperature.
    #E1 = docsearch[reactor temperature]
    #Plan2: Convert it to Celsius.
    #E2 = calculator[#E1 - 273.15]

``Plan:`` without a number and ``#E1: tool[input]`` are accepted too, and so is JSON
(``{"steps": [{"plan": ..., "tool": ..., "input": ...}]}``, what a planner constrained by
a JSON schema writes). A step may use the evidence of earlier steps as ``#En`` (or
``#en``); references are whole tokens, so ``#E1`` never matches inside ``#E10``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace

__all__ = [
    "Plan",
    "PlanStep",
    "PlanValidationError",
    "merge_duplicate_steps",
    "parse_plan",
    "parse_plan_json",
    "plan_levels",
    "substitute_evidence",
    "validate_plan",
]

# No two runs of optional whitespace meet ("\s*#?\s*", "\s*\d*\s*"): on a long line of
# spaces the engine would try every split between them, quadratic in the line's length.
_PLAN_LINE = re.compile(r"^\s*(?:#\s*)?Plan\s*(?:\d+\s*)?[:.]\s*(?P<text>.*)$", re.I)
_STEP_LINE = re.compile(
    r"^\s*(?:#\s*)?E(?P<id>\d{1,9})\s*[:=]\s*(?P<tool>[A-Za-z_][\w.-]*)\s*\[(?P<input>.*)\]\s*$",
    re.I,
)
# A line that starts as a step does ("#E2 =", "E2:") but fits no step pattern is a step
# the planner meant and wrote wrong, or one cut short by max_tokens.
_STEP_START = re.compile(r"^\s*(?:#\s*)?E\d{1,9}\s*[:=]", re.I)
# At most 9 digits, like a step id: int() refuses 4,300 digits and more. Any case, as
# the step lines are read: "#e2 = llm[Summarise #e1]" uses #E1. A whole token: the
# colour #e5e5e5 in a search is no reference to #E5.
_REFERENCE = re.compile(r"#E(\d{1,9})(?!\w)", re.I)


class PlanValidationError(ValueError):
    """A plan that cannot run: every problem found, and the planner's raw text."""

    def __init__(self, problems: list[str], raw: str) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems
        self.raw = raw


@dataclass(frozen=True)
class PlanStep:
    """One tool call of a plan: evidence ``#E{id}`` = ``tool[tool_input]``."""

    id: int
    tool: str
    tool_input: str
    description: str = ""

    @property
    def depends_on(self) -> frozenset[int]:
        """The ids of the steps whose evidence this step's input uses."""
        return frozenset(int(n) for n in _REFERENCE.findall(self.tool_input))


@dataclass(frozen=True)
class Plan:
    """The parsed steps in the planner's order, and the text they came from.

    ``unparsed``: the lines (or JSON items) that fit no pattern; ``unreadable_steps``:
    those of them that are steps the planner meant (a JSON step with fields of the
    wrong type, a line starting ``#E2 =`` cut short), which make the plan invalid.
    """

    steps: list[PlanStep]
    raw: str
    unparsed: list[str] = field(default_factory=list)
    unreadable_steps: list[str] = field(default_factory=list)

    def step(self, step_id: int) -> PlanStep:
        """The step that produces ``#E{step_id}``."""
        return next(s for s in self.steps if s.id == step_id)


def parse_plan(text: str) -> Plan:
    """Read the steps of a planner's output; lines that fit no pattern are kept aside."""
    steps: list[PlanStep] = []
    unparsed: list[str] = []
    unreadable: list[str] = []
    description = ""
    for line in text.replace("```", "\n").splitlines():
        if not line.strip():
            continue
        if match := _STEP_LINE.match(line):
            steps.append(
                PlanStep(
                    id=int(match["id"]),
                    tool=match["tool"].lower(),
                    tool_input=match["input"].strip().strip('"').strip(),
                    description=description,
                )
            )
            description = ""
        elif match := _PLAN_LINE.match(line):
            description = match["text"].strip()
        else:
            unparsed.append(line.strip())
            if _STEP_START.match(line):
                unreadable.append(line.strip())
    return Plan(steps=steps, raw=text, unparsed=unparsed, unreadable_steps=unreadable)


def parse_plan_json(text: str) -> Plan | None:
    """The plan in a planner's JSON output; None when the text is not a JSON plan.

    Steps are numbered by their position from 1, as the prompt tells the planner
    (``#En`` is the n-th step's result); fields of the wrong type make a step unreadable,
    and the steps after it keep their numbers.
    """
    try:
        data = json.loads(text.strip().removeprefix("```json").strip("`").strip())
    except (ValueError, RecursionError):  # a model repeating "[" nests past Python's stack
        return None
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        return None
    steps: list[PlanStep] = []
    unparsed: list[str] = []
    for position, item in enumerate(data["steps"], start=1):
        fields = item if isinstance(item, dict) else {}
        tool, tool_input = fields.get("tool"), fields.get("input")
        if not isinstance(tool, str) or not isinstance(tool_input, str):
            unparsed.append(json.dumps(item))
            continue
        description = fields.get("plan")
        steps.append(
            PlanStep(
                id=position,
                tool=tool.strip().lower(),
                tool_input=tool_input.strip(),
                description=description.strip() if isinstance(description, str) else "",
            )
        )
    # Every item of "steps" is a step: one that could not be read is unreadable.
    return Plan(steps=steps, raw=text, unparsed=unparsed, unreadable_steps=list(unparsed))


def _cycle(steps: dict[int, PlanStep]) -> list[int] | None:
    visiting: list[int] = []
    done: set[int] = set()

    def visit(step_id: int) -> list[int] | None:
        if step_id in done or step_id not in steps:
            return None
        if step_id in visiting:
            return [*visiting[visiting.index(step_id) :], step_id]
        visiting.append(step_id)
        for dependency in sorted(steps[step_id].depends_on):
            if found := visit(dependency):
                return found
        visiting.pop()
        done.add(step_id)
        return None

    for step_id in sorted(steps):
        if found := visit(step_id):
            return found
    return None


def validate_plan(
    plan: Plan, tools: Collection[str], max_steps: int = 12, first_tool: str | None = None
) -> None:
    """Raise :class:`PlanValidationError` listing every reason the plan cannot run.

    ``first_tool``: the tool the first step must use (e.g. ``docsearch``)."""
    problems: list[str] = [f"a step could not be read: {text}" for text in plan.unreadable_steps]
    if not plan.steps:
        problems.append("the plan has no step of the form '#E1 = tool[input]'")
    elif first_tool and (first := min(plan.steps, key=lambda s: s.id)).tool != first_tool:
        problems.append(f"#E{first.id} must use {first_tool}: search the documents first")
    if len(plan.steps) > max_steps:
        problems.append(f"the plan has {len(plan.steps)} steps; at most {max_steps} are allowed")
    by_id: dict[int, PlanStep] = {}
    for step in plan.steps:
        if step.id in by_id:
            problems.append(f"#E{step.id} is defined twice")
        by_id[step.id] = step
        if step.tool not in tools:
            available = ", ".join(sorted(tools))
            problems.append(f"#E{step.id} uses unknown tool {step.tool!r}; available: {available}")
        if not step.tool_input:
            problems.append(f"#E{step.id} has an empty input")
    for step in plan.steps:
        for dependency in sorted(step.depends_on):
            if dependency not in by_id:
                problems.append(f"#E{step.id} refers to #E{dependency}, which no step defines")
            elif dependency == step.id:
                problems.append(f"#E{step.id} refers to itself")
    if (cycle := _cycle(by_id)) and len(cycle) > 2:
        problems.append("the steps form a cycle: " + " -> ".join(f"#E{n}" for n in cycle))
    if problems:
        raise PlanValidationError(problems, plan.raw)


def plan_levels(plan: Plan) -> list[list[PlanStep]]:
    """Steps grouped so that each group depends only on earlier groups (a valid plan)."""
    remaining = {step.id: step for step in plan.steps}
    finished: set[int] = set()
    levels: list[list[PlanStep]] = []
    while remaining:
        ready = [s for s in remaining.values() if s.depends_on <= finished]
        if not ready:
            raise PlanValidationError(
                ["the plan's steps depend on each other in a cycle"], plan.raw
            )
        levels.append(sorted(ready, key=lambda s: s.id))
        for step in ready:
            finished.add(step.id)
            del remaining[step.id]
    return levels


def substitute_evidence(text: str, evidence: Mapping[int, str]) -> str:
    """Replace each whole ``#En`` in ``text`` with step n's evidence (unknown ones stay)."""
    return _REFERENCE.sub(lambda m: evidence.get(int(m.group(1)), m.group(0)), text)


def merge_duplicate_steps(plan: Plan) -> Plan:
    """The plan with repeated calls (same tool, same input) run once.

    Small models pad plans with the same search written again; a repeat is dropped and
    references to it point at its first occurrence. The plan must be valid.

    A step may refer to a later one (``#E2 = llm[#E3]``), so the repeats are found again
    until none is new, each time with the references to those found so far replaced,
    and only then is every kept step's input rewritten: a step already looked at never
    keeps a reference to a repeat dropped after it.
    """
    alias: dict[int, str] = {}
    for _ in range(len(plan.steps) + 1):  # each pass finds a new repeat, or is the last
        first: dict[tuple[str, str], int] = {}
        found: dict[int, str] = {}
        for step in plan.steps:
            key = (step.tool, " ".join(_with(step.tool_input, alias).lower().split()))
            if key in first:
                found[step.id] = f"#E{first[key]}"
            else:
                first[key] = step.id
        if found == alias:
            break
        alias = found
    if not alias:
        return plan
    kept = [
        PlanStep(step.id, step.tool, _with(step.tool_input, alias), step.description)
        for step in plan.steps
        if step.id not in alias
    ]
    return replace(plan, steps=kept)


def _with(text: str, alias: Mapping[int, str]) -> str:
    return substitute_evidence(text, alias) if alias else text
