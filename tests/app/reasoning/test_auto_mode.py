"""The auto mode routes each question by its wording and tries once more when the answer
does not pass the grounding check, within the question's token budget.

A real app (SQLite, Chroma, BM25, hashed embeddings) over a replay LLM: what the LLM is
asked tells which mode ran, and the trace's ``route`` and ``escalate`` steps say why.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from ragloom.events import AnswerRecord, CitationsFound, GroundingChecked, ModeChoice
from ragloom.events import StepFinished as Finished
from ragloom_app.app import BaseApp
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.reasoning.auto import AutoReasoning
from ragloom_app.reasoning.mode_costs import MEASURED_TOKENS, ModeCosts
from ragloom_app.reasoning.rewoo import ReWOOReasoning
from ragloom_app.testing import ReplayLLM, check_reasoning
from tests.helpers.misbehaving_llms import FailingLLM
from tests.helpers.scripted_app import scripted_app

DOCUMENTS = {
    "reactor.md": "The Zorblax reactor runs at 451 kelvin. It was commissioned in 1962 "
    "and has 4 coolant pumps.\n",
}
PLAN = "#Plan1: Find the temperature.\n#E1 = docsearch[Zorblax reactor temperature]\n"
SINGLE = "How hot does the Zorblax reactor run?"
ARITHMETIC = "How many years passed between 1962 and the reactor's first refit in 1990?"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> BaseApp:
    llms = {"replay": {"class": "ragloom_app.testing.ReplayLLM"}}
    return scripted_app(tmp_path_factory.mktemp("auto"), llms, DOCUMENTS)


@pytest.fixture(autouse=True)
def fresh_costs(monkeypatch: pytest.MonkeyPatch) -> ModeCosts:
    """Each test starts from the measured estimates, not from the last test's spending."""
    costs = ModeCosts()
    monkeypatch.setattr("ragloom_app.reasoning.auto.shared_mode_costs", costs)
    return costs


def _ask(
    app: BaseApp, question: str, replies: list[str], **settings: Any
) -> tuple[AnswerRecord, list[Any], ReplayLLM]:
    llm = app.llm()
    assert isinstance(llm, ReplayLLM)
    llm.replies[:] = replies
    llm.prompts.clear()
    events = list(ChatPage(app).ask(question, mode="auto", settings=settings))
    (finished,) = [e for e in events if isinstance(e, AnswerFinished)]
    return finished.record, events, llm


def _choices(record: AnswerRecord) -> dict[str, ModeChoice]:
    return {
        s.name: s.output
        for s in record.steps
        if isinstance(s, Finished) and isinstance(s.output, ModeChoice)
    }


def test_a_single_fact_goes_to_fullqa_and_a_grounded_answer_stands(app: BaseApp) -> None:
    record, events, llm = _ask(app, SINGLE, ["It runs at 451 kelvin [1]."])
    assert record.answer == "It runs at 451 kelvin [1]."
    assert record.grounding is not None and record.grounding.supported
    assert len(llm.prompts) == 1  # one FullQA call, no second try
    choices = _choices(record)
    assert set(choices) == {"route"}
    assert choices["route"].mode == "fullqa" and choices["route"].kind == "single"
    assert choices["route"].reason == "single: no cue of another kind"
    assert [type(e) for e in events].count(CitationsFound) == 1


def test_arithmetic_goes_to_rewoo(app: BaseApp) -> None:
    plan = PLAN + "#Plan2: Subtract.\n#E2 = calculator[1990 - 1962]\n"
    record, _, _ = _ask(app, ARITHMETIC, [plan, "28 years passed [1]."])
    route = _choices(record)["route"]
    assert route.mode == "rewoo" and route.kind == "arithmetic"
    assert '"how many units passed between"' in route.reason
    assert any(s.name == "E2:calculator" for s in record.steps)


def test_an_unsupported_answer_is_tried_again_and_the_grounded_one_stands(app: BaseApp) -> None:
    record, events, llm = _ask(
        app, SINGLE, ["It runs at 900 kelvin [1].", PLAN, "It runs at 451 kelvin [1]."]
    )
    assert record.answer == "It runs at 451 kelvin [1]."
    assert record.grounding is not None and record.grounding.supported
    escalated = _choices(record)["escalate"]
    assert escalated.mode == "rewoo" and escalated.escalated_from == "fullqa"
    assert "declined by the grounding check" in escalated.reason
    assert escalated.tokens_spent > 0
    assert len(llm.prompts) == 3  # FullQA's answer, ReWOO's plan and solution
    # One set of citations and one report, the standing answer's: the UI's contract.
    kinds = [type(e) for e in events]
    assert kinds.count(CitationsFound) == 1 and kinds.count(GroundingChecked) == 1
    check_events = [e for e in events if isinstance(e, GroundingChecked)]
    assert check_events[0].report is record.grounding


def test_a_partly_supported_answer_stands_unless_the_setting_says_try_again(
    app: BaseApp,
) -> None:
    partly = "It runs at 451 kelvin [1]. It has 9 pumps [1]."
    record, _, llm = _ask(app, SINGLE, [partly])
    assert record.grounding is not None and record.grounding.status == "partly"
    assert "escalate" not in _choices(record) and len(llm.prompts) == 1
    record, _, llm = _ask(
        app, SINGLE, [partly, PLAN, "It runs at 451 kelvin [1]."], escalate_partly=True
    )
    assert record.answer == "It runs at 451 kelvin [1]." and len(llm.prompts) == 3
    assert record.grounding is not None and record.grounding.supported


def test_a_second_try_no_better_grounded_leaves_the_first_answer(app: BaseApp) -> None:
    partly = "It runs at 451 kelvin [1]. It has 9 pumps [1]."
    settings = {"escalate_partly": True}
    record, _, _ = _ask(app, SINGLE, [partly, PLAN, "It runs at 800 kelvin [1]."], **settings)
    assert record.answer.endswith(partly)
    assert record.grounding is not None and record.grounding.status == "partly"
    assert any(s.name == "keep" for s in record.steps)
    assert "9" in _choices(record)["escalate"].reason  # the unsupported specific, named


def test_no_second_try_past_the_token_budget(app: BaseApp, fresh_costs: ModeCosts) -> None:
    record, _, llm = _ask(app, SINGLE, ["It runs at 900 kelvin [1]."], token_budget=0)
    assert "escalate" not in _choices(record)
    assert len(llm.prompts) == 1
    assert record.grounding is not None and record.grounding.declined
    # The budget is judged against what the second mode is expected to cost, learnt from
    # what it spent: once ReWOO has cost 5,000 tokens, a 1,500-token budget holds no try.
    fresh_costs.record("rewoo", 5000)
    record, _, llm = _ask(app, SINGLE, ["It runs at 900 kelvin [1]."])
    assert "escalate" not in _choices(record) and len(llm.prompts) == 1


def test_a_question_the_documents_do_not_cover_is_declined_once_without_the_model(
    app: BaseApp,
) -> None:
    record, _, llm = _ask(app, "What does frobnicate_reactor() return?", ["unused"])
    assert record.precheck is not None and record.precheck.declined
    assert "escalate" not in _choices(record)
    assert llm.prompts == []


def test_a_mode_that_fails_is_followed_by_the_second_try(app: BaseApp) -> None:
    # FullQA's one call gets a reply ReplayLLM cannot give (none left): the mode raises.
    record, _, _ = _ask(app, SINGLE, [], escalation_mode="fullqa", single_mode="react")
    assert any(s.name == "error" for s in record.steps)
    assert _choices(record)["escalate"].escalated_from == "react"


def test_a_second_mode_that_cannot_be_built_leaves_the_first_answer(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Building ReWOO fails (as a tool it cannot set up would make it): a failed second
    # try, after which the first, finished answer stands instead of an apology.
    def cannot_build(*args: Any) -> None:
        raise RuntimeError("WEBSEARCH_KEY is not set")

    monkeypatch.setattr(ReWOOReasoning, "get_pipeline", classmethod(cannot_build))
    partly = "It runs at 451 kelvin [1]. It has 9 pumps [1]."
    record, _, llm = _ask(app, SINGLE, [partly], escalate_partly=True)
    assert _choices(record)["escalate"].mode == "rewoo"
    assert any(s.name == "error" for s in record.steps)
    assert any(s.name == "keep" for s in record.steps)
    assert record.answer.endswith(partly) and "Sorry" not in record.answer
    assert record.grounding is not None and record.grounding.status == "partly"
    assert len(llm.prompts) == 1


def test_auto_cannot_route_to_itself_or_to_an_unknown_mode(app: BaseApp) -> None:
    state = app.reasoning_state()
    with pytest.raises(ValueError, match="to itself"):
        AutoReasoning.get_pipeline({"comparison_mode": "auto"}, state, [])
    with pytest.raises(KeyError, match="registered: fullqa"):
        AutoReasoning.get_pipeline({"single_mode": "nosuch"}, state, [])


def test_auto_keeps_the_reasoning_contract() -> None:
    record = check_reasoning(AutoReasoning, llm=ReplayLLM(replies=["451 kelvin [1]."]))
    assert record["mode"] == "auto"


def test_mode_costs_start_from_the_measured_figures_and_follow_what_is_spent() -> None:
    costs = ModeCosts(window=2)
    assert costs.expected("rewoo") == MEASURED_TOKENS["rewoo"]
    assert costs.expected("a_plugin_mode") == 1500
    for spent in (100, 300, 500):
        costs.record("rewoo", spent)
    assert costs.expected("rewoo") == 400  # the last two


def test_several_facts_go_to_the_mode_the_setting_names(app: BaseApp) -> None:
    both = "Which is hotter, and which is older: both reactors?"
    record, _, _ = _ask(app, both, ["It runs at 451 kelvin [1]."])
    route = _choices(record)["route"]
    assert (route.kind, route.mode) == ("comparison", "fullqa")  # measured: the default
    parts = ["1. How hot is the reactor?\n", "451 kelvin [1].", "It runs at 451 kelvin [1]."]
    record, _, _ = _ask(app, both, parts, comparison_mode="decompose")
    assert _choices(record)["route"].mode == "decompose"
    assert record.grounding is not None and record.grounding.supported


@pytest.fixture(scope="module")
def failing_app(tmp_path_factory: pytest.TempPathFactory) -> BaseApp:
    llms = {
        "failing": {
            "class": "tests.helpers.misbehaving_llms.FailingLLM",
            "replies": ["It runs at 451 kelvin [1]."],
        }
    }
    return scripted_app(tmp_path_factory.mktemp("auto_failing"), llms, DOCUMENTS)


def _ask_failing(app: BaseApp, words_first: int, **settings: Any) -> AnswerRecord:
    llm = app.llm()
    assert isinstance(llm, FailingLLM)
    llm.words_first = words_first
    events = list(ChatPage(app).ask(SINGLE, mode="auto", settings=settings))
    (finished,) = [e for e in events if isinstance(e, AnswerFinished)]
    return finished.record


def test_an_answer_its_mode_broke_off_says_so(failing_app: BaseApp) -> None:
    # No budget for a second try: FullQA's three words are the answer, and it says why.
    record = _ask_failing(failing_app, 3, token_budget=0)
    written, said = record.answer.split("\n\n")
    assert written == "It runs at"
    assert re.fullmatch(
        r"\(Answering in the fullqa mode failed: cannot reach \[address hidden\]: refused "
        r"\(log reference [0-9a-f]{8}\)\)",
        said,
    ), said


def test_when_both_tries_fail_the_answer_is_an_apology(failing_app: BaseApp) -> None:
    record = _ask_failing(failing_app, 0)
    assert _choices(record)["escalate"].mode == "rewoo"  # the second try ran, and failed
    assert any(s.name == "keep" for s in record.steps)
    assert record.answer.startswith("Sorry, answering in the fullqa mode failed: cannot reach")
    assert "LLMError" not in record.answer
