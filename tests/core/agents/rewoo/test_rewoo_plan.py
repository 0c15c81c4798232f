"""ReWOO plans: parsing every syntax, validation, DAG levels and evidence substitution."""

import json

import pytest

from ragloom.agents.rewoo import (
    PlanValidationError,
    merge_duplicate_steps,
    parse_plan,
    parse_plan_json,
    plan_levels,
    substitute_evidence,
    validate_plan,
)

TOOLS = {"docsearch", "calculator", "llm"}


def test_parses_hash_plan_and_equals_forms() -> None:
    plan = parse_plan(
        "#Plan1: Find the temperature.\n"
        "#E1 = docsearch[reactor temperature]\n"
        "Plan: Convert it.\n"
        "#E2: Calculator[#E1 - 273.15]\n"
        "Some chatter the model added.\n"
    )
    assert [(s.id, s.tool, s.tool_input) for s in plan.steps] == [
        (1, "docsearch", "reactor temperature"),
        (2, "calculator", "#E1 - 273.15"),
    ]
    assert plan.steps[0].description == "Find the temperature."
    assert plan.steps[1].depends_on == {1}
    assert plan.unparsed == ["Some chatter the model added."]
    validate_plan(plan, TOOLS)


def test_parses_the_json_a_schema_constrained_planner_writes() -> None:
    plan = parse_plan_json(
        '```json\n{"steps": [{"plan": "Find it.", "tool": "DocSearch", "input": " reactor "},'
        ' {"plan": "Convert it.", "tool": "calculator", "input": "#E1 - 273.15"},'
        ' {"tool": 3, "input": "x"}]}\n```'
    )
    assert plan is not None
    assert [(s.id, s.tool, s.tool_input, s.description) for s in plan.steps] == [
        (1, "docsearch", "reactor", "Find it."),
        (2, "calculator", "#E1 - 273.15", "Convert it."),
    ]
    assert plan.unparsed == ['{"tool": 3, "input": "x"}']
    # Anything else is not a JSON plan: the line format is tried instead.
    assert parse_plan_json("#E1 = docsearch[reactor]") is None
    assert parse_plan_json('{"answer": 42}') is None


def test_json_steps_keep_their_position_when_one_cannot_be_read() -> None:
    # #En is the n-th step: a malformed step 2 must not make step 3 into #E2.
    text = json.dumps(
        {
            "steps": [
                {"plan": "revenue", "tool": "docsearch", "input": "Acme revenue"},
                {"plan": "costs", "tool": "docsearch", "input": ["Acme costs"]},
                {"plan": "summary", "tool": "llm", "input": "Summarise #E1"},
                {"plan": "profit", "tool": "llm", "input": "Revenue #E1 minus costs #E2"},
            ]
        }
    )
    plan = parse_plan_json(text)
    assert plan is not None
    assert [(s.id, s.tool_input) for s in plan.steps] == [
        (1, "Acme revenue"),
        (3, "Summarise #E1"),
        (4, "Revenue #E1 minus costs #E2"),
    ]
    with pytest.raises(PlanValidationError) as caught:
        validate_plan(plan, TOOLS, 4, "docsearch")
    assert caught.value.problems == [
        'a step could not be read: {"plan": "costs", "tool": "docsearch", "input": ["Acme costs"]}',
        "#E4 refers to #E2, which no step defines",
    ]


def test_a_step_line_that_fits_no_pattern_makes_the_plan_invalid() -> None:
    # Cut by max_tokens: the step is lost, so the plan is repaired rather than run without it.
    plan = parse_plan("#E1 = docsearch[Acme revenue]\n#E2 = docsearch[Acme costs")
    with pytest.raises(PlanValidationError) as caught:
        validate_plan(plan, TOOLS)
    assert caught.value.problems == ["a step could not be read: #E2 = docsearch[Acme costs"]
    # Chatter is not a step: it stays aside without making the plan invalid.
    chatter = parse_plan("Here is my plan: search.\n#E1 = docsearch[Acme revenue]")
    validate_plan(chatter, TOOLS)
    assert chatter.unparsed == ["Here is my plan: search."] and not chatter.unreadable_steps


def test_references_are_whole_tokens_up_to_e10_and_beyond() -> None:
    lines = [f"#E{n} = docsearch[q{n}]" for n in range(1, 11)]
    lines.append("#E11 = llm[#E1 and #E10 and #E1]")
    plan = parse_plan("\n".join(lines))
    validate_plan(plan, TOOLS)
    assert plan.step(11).depends_on == {1, 10}
    evidence = {1: "one", 10: "ten"}
    assert substitute_evidence("#E1 and #E10 and #E1 but #E7", evidence) == (
        "one and ten and one but #E7"
    )


def test_references_are_read_in_any_case_as_step_lines_are() -> None:
    plan = parse_plan("#e1 = docsearch[reactor]\n#e2 = llm[Summarise #e1]")
    validate_plan(plan, TOOLS)
    assert plan.step(2).depends_on == {1}
    assert [[s.id for s in level] for level in plan_levels(plan)] == [[1], [2]]
    assert substitute_evidence(plan.step(2).tool_input, {1: "PASSAGES"}) == "Summarise PASSAGES"
    with pytest.raises(PlanValidationError, match="#E1 refers to #E3, which no step defines"):
        validate_plan(parse_plan("#E1 = llm[#e3]"), TOOLS)
    colours = parse_plan("#E1 = docsearch[what the colours #e5e5e5 and #E5A2 are for]")
    validate_plan(colours, TOOLS)
    assert colours.step(1).depends_on == frozenset()


def test_a_reference_or_step_number_of_thousands_of_digits_is_text_not_a_crash() -> None:
    # int() refuses 4,300 digits and more; a model may write anything.
    huge = "9" * 5000
    plan = parse_plan(f"#E1 = docsearch[x #E{huge}]")
    assert plan.step(1).depends_on == frozenset()
    assert substitute_evidence(f"#E{huge}", {1: "one"}) == f"#E{huge}"
    with pytest.raises(PlanValidationError, match="no step of the form"):
        validate_plan(parse_plan(f"#E{huge} = docsearch[x]"), TOOLS)


def test_a_long_run_of_spaces_is_read_as_any_line() -> None:
    # Lines a model padded with 16,000 spaces (the patterns once took seconds on them).
    spaces = " " * 16_000
    plan = parse_plan(
        f"{spaces}x\n#Plan{spaces}: Find it.\n#{spaces}E1{spaces}= docsearch[reactor]{spaces}"
    )
    assert [(s.id, s.tool, s.tool_input, s.description) for s in plan.steps] == [
        (1, "docsearch", "reactor", "Find it.")
    ]
    assert plan.unparsed == ["x"]


def test_json_nested_past_pythons_stack_is_not_a_plan_not_a_crash() -> None:
    assert parse_plan_json('{"steps": ' + "[" * 5000) is None
    assert parse_plan_json('{"steps": ' + "[" * 5000 + "]" * 5000 + "}") is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("I will just answer from memory.", "no step of the form"),
        ("#E1 = websearch[x]", "unknown tool 'websearch'; available: calculator, docsearch, llm"),
        ("#E1 = llm[#E2]", "#E1 refers to #E2, which no step defines"),
        ("#E1 = llm[#E1]", "#E1 refers to itself"),
        ("#E1 = llm[#E2]\n#E2 = llm[#E1]", "cycle: #E1 -> #E2 -> #E1"),
        ("#E1 = docsearch[]", "#E1 has an empty input"),
        ("#E1 = docsearch[a]\n#E1 = docsearch[b]", "#E1 is defined twice"),
    ],
)
def test_invalid_plans_are_refused_with_the_reason(text: str, problem: str) -> None:
    with pytest.raises(PlanValidationError) as caught:
        validate_plan(parse_plan(text), TOOLS)
    assert any(problem in p for p in caught.value.problems), caught.value.problems
    assert caught.value.raw == text


def test_a_looping_planner_is_stopped_at_the_step_limit() -> None:
    plan = parse_plan("\n".join(f"#E{n} = docsearch[q]" for n in range(1, 40)))
    with pytest.raises(PlanValidationError, match="39 steps; at most 12"):
        validate_plan(plan, TOOLS)


def test_levels_group_independent_steps() -> None:
    plan = parse_plan(
        "#E1 = docsearch[a]\n#E2 = docsearch[b]\n#E3 = llm[#E1 #E2]\n#E4 = calculator[1+1]\n"
    )
    assert [[s.id for s in level] for level in plan_levels(plan)] == [[1, 2, 4], [3]]


def test_a_first_tool_can_be_required() -> None:
    searches = parse_plan("#E1 = docsearch[reactor]\n#E2 = llm[#E1]")
    validate_plan(searches, TOOLS, first_tool="docsearch")
    with pytest.raises(PlanValidationError, match="#E1 must use docsearch"):
        validate_plan(parse_plan("#E1 = llm[How hot?]"), TOOLS, first_tool="docsearch")


def test_a_search_written_again_runs_once_and_its_references_point_at_the_first() -> None:
    plan = parse_plan("#E1 = docsearch[a b]\n#E2 = docsearch[A  b]\n#E3 = llm[#E1 or #E2]")
    merged = merge_duplicate_steps(plan)
    assert [(s.id, s.tool_input) for s in merged.steps] == [
        (1, "a b"),
        (3, "#E1 or #E1"),
    ]


def test_a_repeat_a_step_before_it_refers_to_is_merged_without_leaving_that_reference() -> None:
    """A plan may refer forward: #E2 used #E3, dropped as a repeat of #E1 after #E2 was
    looked at, and the plan left a reference to no step (a crash, once, as a cycle)."""
    plan = parse_plan(
        "#E1 = docsearch[acme revenue]\n#E2 = llm[revenue from #E3]\n"
        "#E3 = docsearch[acme revenue]\n#E4 = llm[#E2]\n#E5 = llm[revenue from #E1]"
    )
    validate_plan(plan, TOOLS)
    merged = merge_duplicate_steps(plan)
    assert [(s.id, s.tool_input) for s in merged.steps] == [
        (1, "acme revenue"),
        (2, "revenue from #E1"),
        (4, "#E2"),  # #E5 is #E2 once #E3 is #E1: #E4 keeps naming #E2
    ]
    validate_plan(merged, TOOLS)
    assert [[s.id for s in level] for level in plan_levels(merged)] == [[1], [2], [4]]
