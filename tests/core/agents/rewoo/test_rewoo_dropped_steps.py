"""ReWOO with steps that cannot work: dropped before running, shown in the plan, and
never degrading the answer (scripted LLM, real index and tool sandbox)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragloom.events import AnswerCollector, PlanCreated, PlanItem, StepFinished, StepStarted
from ragloom.retrieval import FullTextRetriever
from tests.helpers.rewoo_agent import ShoutTool, reactor_retriever, rewoo_agent
from tests.helpers.scripted_llm import ScriptedLLM


@pytest.fixture
def retriever(tmp_path: Path) -> FullTextRetriever:
    return reactor_retriever(tmp_path)


def _plan(events: list) -> PlanCreated:
    return next(e for e in events if isinstance(e, PlanCreated))


def _started(events: list) -> list[str]:
    return [e.name for e in events if isinstance(e, StepStarted)]


def test_a_calculator_step_on_a_search_result_is_dropped_and_the_answer_still_comes(
    retriever: FullTextRetriever,
) -> None:
    # The padded plan: the calculator would get passages as its expression.
    plan = (
        "#Plan1: Find the reactor's temperature.\n#E1 = docsearch[reactor temperature]\n"
        "#Plan2: Find the canteen's hours.\n#E2 = docsearch[canteen opens]\n"
        "#Plan3: Compute it.\n#E3 = calculator[#E2]\n"
    )
    # The two searches run at once, so either may be source [1]: the answer cites both,
    # and its number is in one of them whichever it is (the grounding check passes).
    llm = ScriptedLLM(replies=[plan, "The reactor runs at 451 kelvin [1, 2]."])
    events = rewoo_agent(llm, retriever).run("How hot is the reactor?")
    record = AnswerCollector("rewoo").extend(events).to_dict(0.0)

    assert record["answer"] == "The reactor runs at 451 kelvin [1, 2]."
    assert "E3:calculator" not in _started(events)  # never run
    why = "#E2 gives passages found in the documents, which calculator does not take as input"
    dropped = _plan(events).steps[2]
    assert (dropped.id, dropped.status, dropped.reason) == ("E3", "dropped", why)
    assert [item.status for item in _plan(events).steps] == ["planned", "planned", "dropped"]
    # ask --json shows it; the steps that ran have no status key, as before.
    steps = json.loads(json.dumps(record))["steps"]
    shown = next(step for step in steps if step["event"] == "plan")["plan"]
    assert shown[2]["status"] == "dropped" and shown[2]["reason"] == why
    assert "status" not in shown[0]
    assert PlanItem.from_dict(shown[2]) == dropped
    # The solver gets both searches' passages and nothing of the dropped step.
    solver_prompt = llm.prompts[1][-1].content
    # (The two searches run at once: either may be numbered first.)
    assert "] (reactor.md) The Zorblax" in solver_prompt and "] (canteen.md)" in solver_prompt
    assert "#E3" not in solver_prompt and "calculator" not in solver_prompt
    assert "Error" not in solver_prompt and "500 characters" not in solver_prompt


def test_arithmetic_on_the_numbers_of_earlier_steps_is_kept_and_runs(
    retriever: FullTextRetriever,
) -> None:
    plan = (
        "#E1 = docsearch[reactor temperature]\n#E2 = calculator[451 - 273.15]\n"
        "#E3 = calculator[round(#E2 * 9 / 5 + 32, 2)]\n"
    )
    llm = ScriptedLLM(replies=[plan, "It runs at 352.13 °F [1]."])
    events = rewoo_agent(llm, retriever).run("How hot is the reactor in Fahrenheit?")
    assert [item.status for item in _plan(events).steps] == ["planned"] * 3
    solver_prompt = llm.prompts[1][-1].content
    assert "#E3 = calculator[round(#E2 * 9 / 5 + 32, 2)] -> 352.13" in solver_prompt


def test_a_step_using_a_dropped_step_is_dropped_too(retriever: FullTextRetriever) -> None:
    plan = (
        "#E1 = docsearch[reactor temperature]\n#E2 = calculator[#E1 - 273.15]\n"
        "#E3 = llm[Say #E2 degrees Celsius in words]\n"
    )
    llm = ScriptedLLM(replies=[plan, "It runs at 451 kelvin [1]."])  # no call for the llm tool
    events = rewoo_agent(llm, retriever).run("How hot is the reactor in Celsius?")
    steps = _plan(events).steps
    assert [(i.status, i.reason) for i in steps[1:]] == [
        (
            "dropped",
            "#E1 gives passages found in the documents, which calculator does not take as input",
        ),
        ("dropped", "it uses #E2, which is not run"),
    ]
    assert _started(events) == ["plan", "work", "E1:docsearch", "solve"]
    assert len(llm.prompts) == 2  # plan and solve


def test_an_all_dropped_plan_answers_from_a_search_for_the_question(
    retriever: FullTextRetriever,
) -> None:
    # Without a grammar nor a search-first rule, a plan may not search at all.
    plan = "#E1 = calculator[reactor temperature in Celsius]\n"
    llm = ScriptedLLM(replies=[plan, "The reactor runs at 451 kelvin [1]."])
    agent = rewoo_agent(llm, retriever)
    agent.planner.search_first = False
    events = agent.run("How hot is the reactor?")
    record = AnswerCollector("rewoo").extend(events).to_dict(0.0)

    dropped, added = _plan(events).steps
    assert dropped.status == "dropped"
    assert dropped.reason.startswith("calculator cannot take this input: not an arithmetic")
    assert (added.id, added.label, added.status) == (
        "E2",
        "docsearch[How hot is the reactor?]",
        "added",
    )
    assert [c["chunk_id"] for c in record["citations"]] == ["a-0"]
    assert record["answer"] == "The reactor runs at 451 kelvin [1]."
    assert "[1] (reactor.md) The Zorblax reactor runs at 451 kelvin." in llm.prompts[1][-1].content


def test_text_of_an_llm_step_is_checked_once_known(retriever: FullTextRetriever) -> None:
    plan = (
        "#E1 = docsearch[reactor temperature]\n#E2 = llm[The kelvin number in #E1, digits only]\n"
        "#E3 = calculator[#E2 - 273.15]\n#E4 = llm[The canteen's opening hour, after #E3]\n"
        "#E5 = calculator[#E4 + 1]\n"
    )
    replies = [plan, "451", "It opens at eight.", "It runs at 177.85 °C [1]."]
    llm = ScriptedLLM(replies=replies)
    agent = rewoo_agent(llm, retriever)
    agent.planner.max_steps = 5
    events = agent.run("How hot is the reactor in Celsius?")
    assert all(item.status == "planned" for item in _plan(events).steps)
    record = AnswerCollector("rewoo").extend(events).to_dict(0.0)
    finished = {s["step"]: s for s in record["steps"] if s.get("event") == "finished"}
    assert finished["E3:calculator"]["output"]["output"] == "177.85"
    # "It opens at eight. + 1" is no expression: refused without calling the calculator.
    assert finished["E5:calculator"]["error"].startswith(
        "invalid_input: calculator cannot take this input: not an arithmetic expression"
    )
    calculator_calls = [e for e in events if isinstance(e, StepFinished) and "calc" in e.name]
    assert [e.output["attempts"] for e in calculator_calls] == [1, 0]
    solver_prompt = llm.prompts[-1][-1].content
    assert "#E3 = calculator[#E2 - 273.15] -> 177.85" in solver_prompt
    assert "#E5" not in solver_prompt  # a failed step gives the solver nothing


def test_a_plugin_tool_without_a_checker_is_kept_as_today(retriever: FullTextRetriever) -> None:
    plan = "#E1 = docsearch[reactor temperature]\n#E2 = shout[#E1]\n"
    llm = ScriptedLLM(replies=[plan, "It runs at 451 kelvin [1]."])
    events = rewoo_agent(llm, retriever, shout=ShoutTool).run("How hot is the reactor?")
    assert [item.status for item in _plan(events).steps] == ["planned", "planned"]
    assert "THE ZORBLAX REACTOR RUNS AT 451 KELVIN." in llm.prompts[1][-1].content


def test_a_plan_step_status_is_one_of_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown plan step status 'skipped'"):
        PlanItem("E1", status="skipped")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown plan step status"):
        PlanItem.from_dict({"id": "E1", "status": ["dropped"]})
