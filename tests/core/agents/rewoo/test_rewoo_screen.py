"""Screening a ReWOO plan: steps whose inputs cannot work are dropped before anything runs."""

from __future__ import annotations

import logging
from typing import ClassVar

import pytest

from ragloom.agents.rewoo import (
    ADDED_SEARCH_TEXT,
    DroppedStep,
    input_problem,
    parse_plan,
    screen_plan,
)
from ragloom.agents.rewoo.planner import PLANNER_SYSTEM_PROMPT
from ragloom.agents.rewoo.screen import MAX_REASON_CHARS
from ragloom.agents.tools import (
    BUILTIN_TOOLS,
    BaseTool,
    CalculatorTool,
    check_runnable,
)
from tests.helpers.rewoo_agent import ShoutTool

TOOLS: dict[str, type[BaseTool]] = {tool.name: tool for tool in BUILTIN_TOOLS}


class _CrashingChecker(ShoutTool):
    name: ClassVar[str] = "fragile"

    @classmethod
    def check_input(cls, text: str) -> str | None:
        raise RuntimeError("checker bug")


class _VerboseChecker(ShoutTool):
    name: ClassVar[str] = "verbose"

    @classmethod
    def check_input(cls, text: str) -> str | None:
        return "no " * 1000


def _screen(text: str, question: str = "How hot is the reactor?", **extra: type[BaseTool]):
    return screen_plan(parse_plan(text), {**TOOLS, **extra}, question)


def _reasons(dropped: tuple[DroppedStep, ...]) -> dict[int, str]:
    return {item.step.id: item.reason for item in dropped}


def test_a_calculator_step_fed_a_search_result_is_dropped() -> None:
    # The case: #E2 is a search, so its passages would be pasted into the expression.
    screened = _screen(
        "#E1 = docsearch[reactor temperature]\n#E2 = docsearch[canteen hours]\n"
        "#E3 = calculator[#E2]\n"
    )
    assert [s.id for s in screened.plan.steps] == [1, 2] and screened.added is None
    assert _reasons(screened.dropped) == {
        3: "#E2 gives passages found in the documents, which calculator does not take as input"
    }


def test_arithmetic_on_numbers_of_earlier_steps_is_kept() -> None:
    screened = _screen(
        "#E1 = docsearch[reactor]\n#E2 = calculator[451 - 273.15]\n"
        "#E3 = calculator[round(#E2 * 9 / 5 + 32, 1) / (#E2 - #E2 + 1)]\n"
    )
    assert screened.dropped == () and [s.id for s in screened.plan.steps] == [1, 2, 3]


def test_a_calculator_input_that_is_not_arithmetic_is_dropped_before_it_runs() -> None:
    screened = _screen(
        "#E1 = docsearch[reactor]\n#E2 = calculator[the reactor temperature in Celsius]\n"
        "#E3 = calculator[#E2 kelvin]\n#E4 = calculator[sqrt(2, 3)]\n"
    )
    assert _reasons(screened.dropped) == {
        2: "calculator cannot take this input: not an arithmetic expression: invalid syntax",
        3: "it uses #E2, which is not run",
        4: "calculator cannot take this input: sqrt takes 1 argument, got 2",
    }


def test_text_of_another_tool_is_checked_when_known_not_before() -> None:
    # An llm step may well answer with a bare number: the worker checks the filled-in input.
    screened = _screen(
        "#E1 = docsearch[reactor]\n#E2 = llm[The number in #E1]\n#E3 = calculator[#E2 * 2]"
    )
    assert screened.dropped == ()


def test_the_planners_own_examples_pass_the_screen() -> None:
    # A small model copies the prompt's examples; an example the screen drops (it once
    # taught ``calculator[#E1 * 0.92]`` over a search) teaches padding.
    examples = PLANNER_SYSTEM_PROMPT.split("Example question: ")[1:]
    assert len(examples) == 2
    for example in examples:
        question, plan_text = example.split("\n", 1)
        plan = parse_plan(plan_text)
        assert plan.steps, question
        screened = screen_plan(plan, TOOLS, question)
        assert screened.dropped == (), question
        assert len(screened.plan.steps) == len(plan.steps)


def test_steps_using_a_dropped_step_are_dropped_too_whatever_their_tool() -> None:
    screened = _screen(
        "#E1 = docsearch[reactor]\n#E2 = calculator[#E1 * 0.92]\n"
        "#E3 = llm[Explain #E2]\n#E4 = llm[Shorten #E3 and #E1]\n"
    )
    assert [s.id for s in screened.plan.steps] == [1]
    assert _reasons(screened.dropped) == {
        2: "#E1 gives passages found in the documents, which calculator does not take as input",
        3: "it uses #E2, which is not run",
        4: "it uses #E3, which is not run",
    }


def test_a_search_may_use_any_result_even_passages() -> None:
    screened = _screen("#E1 = docsearch[reactor]\n#E2 = docsearch[#E1 in Celsius]\n")
    assert screened.dropped == ()


def test_when_no_search_is_left_the_question_is_searched() -> None:
    screened = _screen(
        "#E1 = calculator[reactor temperature]\n#E2 = llm[Say #E1 in words]\n",
        question="How hot is the #E1 reactor, or the #e2 one?",
    )
    assert list(_reasons(screened.dropped)) == [1, 2]
    assert screened.added is not None and screened.plan.steps == [screened.added]
    added = screened.added
    # "#E1" in the question is no reference: the added search depends on nothing.
    assert (added.id, added.tool, added.tool_input) == (
        3,
        "docsearch",
        "How hot is the E1 reactor, or the e2 one?",
    )
    assert added.description == ADDED_SEARCH_TEXT and added.depends_on == frozenset()
    # No search tool, or none wanted: nothing is added and nothing is left to run.
    calculator_only = {"calculator": CalculatorTool}
    bare = screen_plan(parse_plan("#E1 = calculator[x y]"), calculator_only, "Q?")
    assert bare.plan.steps == [] and bare.added is None
    plan = parse_plan("#E1 = calculator[x y]")
    assert screen_plan(plan, TOOLS, "Q?", search_tool=None).plan.steps == []


def test_an_intact_plan_is_returned_as_it_is() -> None:
    plan = parse_plan("#E1 = docsearch[reactor]\n#E2 = llm[Summarise #E1]\n")
    screened = screen_plan(plan, TOOLS, "Q?")
    assert screened.plan is plan and screened.dropped == () and screened.added is None


def test_a_plugin_tool_without_a_checker_takes_anything_as_today() -> None:
    screened = _screen(
        "#E1 = docsearch[reactor]\n#E2 = shout[#E1]\n#E3 = shout[any words at all]\n",
        shout=ShoutTool,
    )
    assert screened.dropped == ()
    assert ShoutTool.check_input("anything") is None
    assert ShoutTool.accepts == {"text", "number", "passages"}
    assert ShoutTool.result_kind == "text"


def test_a_checker_that_raises_lets_the_step_run_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        screened = _screen("#E1 = docsearch[x]\n#E2 = fragile[y]\n", fragile=_CrashingChecker)
    assert screened.dropped == ()
    assert "tool fragile: check_input raised RuntimeError: checker bug" in caplog.text


def test_a_long_reason_is_cut_to_its_limit() -> None:
    reason = input_problem(_VerboseChecker, "x")
    assert reason is not None and len(reason) == MAX_REASON_CHARS
    assert reason.endswith("the limit is 300]")


@pytest.mark.parametrize(
    ("attribute", "value", "message"),
    [
        ("result_kind", "image", "result_kind must be one of: number, passages, text"),
        ("accepts", frozenset({"text", "video"}), "accepts must be a frozenset of:"),
        ("accepts", "text", "accepts must be a frozenset of:"),
        ("check_input", None, "check_input must be a classmethod"),
    ],
)
def test_a_tool_that_says_what_it_takes_wrongly_is_refused(
    attribute: str, value: object, message: str
) -> None:
    bad = type("BadTool", (ShoutTool,), {attribute: value, "__module__": __name__})
    with pytest.raises(TypeError, match=message):
        check_runnable(bad)


def test_a_search_using_a_dropped_step_searches_for_what_that_step_was_to_find() -> None:
    screened = _screen(
        "#Plan1: Find the small businesses.\n#E1 = docsearch[small businesses]\n"
        "#Plan2: Keep only the new ones.\n#E2 = calculator[#E1 <= 1000]\n"
        "#Plan3: Look them up.\n#E3 = docsearch[#E2]\n"
    )
    assert set(_reasons(screened.dropped)) == {2, 3}
    (repair,) = screened.repaired
    assert repair.step.tool == "docsearch" and repair.step.tool_input == "Keep only the new ones."
    assert (
        repair.step.id == 4
        and repair.reason == "in place of #E3: searches for what #E2 was to find"
    )
    assert [s.id for s in screened.plan.steps] == [1, 4] and screened.added is None
