"""The ReWOO planner: one LLM call writes every tool call, before any of them runs.

Where the LLM honours GBNF grammars (llama.cpp), the output is constrained to numbered
``#PlanN:`` / ``#EN = tool[input]`` pairs with known tool names, at most ``max_steps`` of
them and bounded line lengths: a small model then always writes a plan that parses, and
a planner that would loop (kotaemon's reached #E10) simply has to stop. Endpoints that
take a JSON schema but no grammar (OpenAI, vLLM, Ollama) get the same bounds as a schema
(known tools, at most ``max_steps`` steps). A plan that fails validation gets one repair
call showing the problems; a second failure is reported.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from theflow import Param

from ragloom.agents.rewoo.plan import (
    Plan,
    PlanValidationError,
    parse_plan,
    parse_plan_json,
    validate_plan,
)
from ragloom.agents.tools.base import BaseTool
from ragloom.base import BaseComponent
from ragloom.events import Event, LLMCallFinished, StepFinished, StepStarted
from ragloom.llms.base import ChatLLM, ChatMessage, GenerationOptions

__all__ = [
    "PLANNER_SYSTEM_PROMPT",
    "PlanningFailed",
    "ReWOOPlanner",
    "plan_grammar",
    "plan_schema",
]

PLANNER_SYSTEM_PROMPT = """You plan how to answer a question with tools; you do not answer it.
Tools:
{tools}
Write each step as two lines:
#Plan1: <what this step finds out>
#E1 = <tool>[<input>]
An input may use the result of an earlier step by its name, e.g. #E1. Most questions need
one docsearch only; add a step only for a different fact or a calculation.

Example question: When did Acme open its first plant?
#Plan1: Find when Acme opened its first plant.
#E1 = docsearch[Acme first plant opened]

Example question: What is Acme's revenue in euros?
#Plan1: Find Acme's revenue in dollars.
#E1 = docsearch[Acme revenue]
#Plan2: Take the revenue in dollars from the passages, as a number.
#E2 = llm[Acme's revenue in dollars, as a number only, from: #E1]
#Plan3: Convert it to euros at 0.92 euros per dollar.
#E3 = calculator[#E2 * 0.92]"""

JSON_FORMAT = """
Write the plan as JSON instead of lines:
{"steps": [{"plan": "<what this step finds out>", "tool": "<tool>", "input": "<input>"}]}
The result of step n is #En."""

REPAIR_PROMPT = (
    "This plan cannot run: {problems}. Write the whole plan again, corrected, in the same format."
)

PLAN_LABEL = "Planning the tool calls"


class PlanningFailed(Exception):
    """The planner wrote no runnable plan, even after its repair attempt."""

    def __init__(self, error: PlanValidationError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass(frozen=True)
class PlanningOutcome:
    """A validated plan and whether it took the repair attempt."""

    plan: Plan
    repaired: bool
    first_problems: list[str]


def _gbnf_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _input_rule(n: int, max_chars: int) -> str:
    """Step ``n``'s input: text in which ``#`` may only start a reference to an earlier step."""
    plain = "[^\\]\\n#]"
    if n == 1:
        return f"input{n} ::= [^\\]\\n# ] {plain}{{0,{max_chars}}}"
    if n <= 10:
        earlier = "[1-9]" if n == 10 else f"[1-{n - 1}]"
        reference = f'"#E" {earlier}'
    else:  # two-digit references are left to validation
        reference = '"#E" [0-9]+'
    piece = f"({plain} | {reference})"
    return f"input{n} ::= ([^\\]\\n# ] | {reference}) {piece}{{0,{max_chars}}}"


def plan_grammar(
    tool_names: Sequence[str],
    max_steps: int,
    max_chars: int = 160,
    first_tool: str | None = None,
) -> str:
    """A GBNF grammar of plans: steps 1..``max_steps`` in order, known tools, short lines,
    and references (``#En``) only to earlier steps, so neither a cycle nor a dangling
    reference can be written. ``first_tool`` fixes the tool of step 1."""
    if not tool_names or max_steps < 1:
        raise ValueError("a plan grammar needs at least one tool and one step")
    rules = []
    for n in range(1, max_steps + 1):
        plan, step = _gbnf_literal(f"#Plan{n}: "), _gbnf_literal(f"\n#E{n} = ")
        tool = _gbnf_literal(first_tool) if n == 1 and first_tool else "tool"
        rules.append(f'step{n} ::= {plan} text {step} {tool} "[" input{n} "]\\n"')
    chain = f"step{max_steps}"
    for n in range(max_steps - 1, 0, -1):
        chain = f"step{n} ({chain})?"
    tools = " | ".join(_gbnf_literal(name) for name in tool_names)
    return "\n".join(
        [
            f"root ::= {chain}",
            *rules,
            f"tool ::= {tools}",
            # Text may not be empty nor start with a space.
            f"text ::= [^\\n ] [^\\n]{{0,{max_chars}}}",
            *(_input_rule(n, max_chars) for n in range(1, max_steps + 1)),
        ]
    )


def plan_schema(tool_names: Sequence[str], max_steps: int, max_chars: int = 160) -> dict[str, Any]:
    """A JSON schema of plans: 1..``max_steps`` steps, each a known tool with an input.

    References between steps are left to validation (a schema cannot order them)."""
    if not tool_names or max_steps < 1:
        raise ValueError("a plan schema needs at least one tool and one step")
    step = {
        "type": "object",
        "properties": {
            "plan": {"type": "string", "maxLength": max_chars},
            "tool": {"type": "string", "enum": list(tool_names)},
            "input": {"type": "string", "minLength": 1, "maxLength": max_chars},
        },
        "required": ["plan", "tool", "input"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "steps": {"type": "array", "items": step, "minItems": 1, "maxItems": max_steps}
        },
        "required": ["steps"],
        "additionalProperties": False,
    }


class ReWOOPlanner(BaseComponent):
    """Writes and validates a plan for a question (see the module docstring)."""

    llm: ChatLLM = Param(help="The planner's chat model.")
    tools: list[type[BaseTool]] = Param(help="The tools a plan may call.")
    max_steps: int = Param(4, help="Most steps a plan may have.")
    max_tokens: int = Param(480, help="Most tokens the planner may write.")
    constraint: str | None = Param(
        None,
        help="How the output is constrained: 'grammar' (GBNF), 'json_schema' or 'none'; "
        "None: a grammar if the LLM takes one, else a JSON schema if it takes one.",
    )
    search_first: bool = Param(
        True,
        help="Step 1 is a docsearch (when that tool exists): the grammar writes it; "
        "other plans are checked, and repaired once if they do not start with one.",
    )

    def constraint_used(self) -> str:
        """``grammar``, ``json_schema`` or ``none``: what this planner's LLM will get."""
        if self.constraint is not None:
            if self.constraint not in ("grammar", "json_schema", "none"):
                raise ValueError(f"unknown plan constraint {self.constraint!r}")
            return self.constraint
        if self.llm.supports_grammar:
            return "grammar"
        return "json_schema" if self.llm.supports_json_schema else "none"

    def messages(self, question: str) -> list[ChatMessage]:
        """The planner's prompt: tools and format first (stable, so cached), then the question."""
        tools = "\n".join(f"{t.name}[input]: {t.description}" for t in self.tools)
        system = PLANNER_SYSTEM_PROMPT.format(tools=tools)
        if self.constraint_used() == "json_schema":
            system += "\n" + JSON_FORMAT
        return [ChatMessage("system", system), ChatMessage("user", f"Question: {question.strip()}")]

    def options(self) -> GenerationOptions:
        """Generation options: greedy, bounded, constrained as :meth:`constraint_used` says."""
        names = [t.name for t in self.tools]
        constraint = self.constraint_used()
        grammar = schema = None
        if constraint == "grammar":
            grammar = plan_grammar(names, self.max_steps, first_tool=self._first_tool())
        elif constraint == "json_schema":
            schema = plan_schema(names, self.max_steps)
        return GenerationOptions(
            max_tokens=self.max_tokens, temperature=0.0, grammar=grammar, json_schema=schema
        )

    def _first_tool(self) -> str | None:
        names = [t.name for t in self.tools]
        return "docsearch" if self.search_first and "docsearch" in names else None

    def parse(self, text: str) -> Plan:
        """The plan in the planner's output: JSON when it is JSON, else the line format."""
        return parse_plan_json(text) or parse_plan(text)

    def stream(self, question: str) -> Generator[Event, None, PlanningOutcome]:
        """Yield the planning step's events; return the validated plan.

        Raises :class:`PlanningFailed` when the repaired plan is still invalid.
        """
        started = time.perf_counter()
        yield StepStarted(
            "plan", {"question": question, "tools": [t.name for t in self.tools]}, label=PLAN_LABEL
        )
        messages = self.messages(question)
        names = [t.name for t in self.tools]
        result = self.llm.run(messages, self.options())
        yield LLMCallFinished("plan", result.usage)
        plan = self.parse(result.text)
        try:
            validate_plan(plan, names, self.max_steps, self._first_tool())
            yield StepFinished(
                "plan", time.perf_counter() - started, output={"repaired": False}, label=PLAN_LABEL
            )
            return PlanningOutcome(plan, repaired=False, first_problems=[])
        except PlanValidationError as first:
            first_error = first
        repair = [
            *messages,
            ChatMessage("assistant", result.text.strip() or "(nothing)"),
            ChatMessage("user", REPAIR_PROMPT.format(problems="; ".join(first_error.problems))),
        ]
        result = self.llm.run(repair, self.options())
        yield LLMCallFinished("plan-repair", result.usage)
        first_plan, plan = plan, self.parse(result.text)
        try:
            validate_plan(plan, names, self.max_steps, self._first_tool())
        except PlanValidationError as second:
            # A plan cut short by max_tokens is often cut again: the steps it could read
            # run, if they make a plan without the ones it could not.
            readable = self._readable_part(plan, names) or self._readable_part(first_plan, names)
            if readable is None:
                yield StepFinished(
                    "plan", time.perf_counter() - started, error=str(second), label=PLAN_LABEL
                )
                raise PlanningFailed(second) from None
            plan = readable
        yield StepFinished(
            "plan",
            time.perf_counter() - started,
            output={"repaired": True, "first_problems": first_error.problems},
            label=PLAN_LABEL,
        )
        return PlanningOutcome(plan, repaired=True, first_problems=first_error.problems)

    def _readable_part(self, plan: Plan, names: list[str]) -> Plan | None:
        """``plan`` without the steps it could not read, if it has some and is valid so."""
        if not plan.unreadable_steps:
            return None
        readable = replace(plan, unreadable_steps=[])
        try:
            validate_plan(readable, names, self.max_steps, self._first_tool())
        except PlanValidationError:
            return None
        return readable

    def plan(self, question: str) -> PlanningOutcome:
        """:meth:`stream` without its events: the validated plan (or :class:`PlanningFailed`)."""
        events = self.stream(question)
        while True:
            try:
                next(events)
            except StopIteration as finished:
                outcome: PlanningOutcome = finished.value
                return outcome
