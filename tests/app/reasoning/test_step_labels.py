"""Every built-in mode labels its own steps, in the words the chat has always shown.

The chat draws a step's status from ``StepStarted.label`` alone (no table of the built-in
modes' step names): these are the words the old table and regex gave, now chosen by the
modes themselves, so the chat reads as before.
"""

from __future__ import annotations

import re

import pytest

from ragloom.events import PlanCreated, StepFinished, StepStarted
from ragloom_app.app import BaseApp
from ragloom_app.pages.chat import ChatPage
from ragloom_app.testing import ReplayLLM
from tests.helpers.scripted_app import scripted_app

PLAN = (
    "#Plan1: Find the temperature.\n#E1 = docsearch[reactor temperature]\n"
    "#Plan2: Convert it.\n#E2 = calculator[451 - 273.15]\n"
)
REPLIES = {
    "fullqa": ["It runs at 451 kelvin [1]."],
    "decompose": ["1. How hot is the reactor?\n", "451 kelvin [1].", "It runs at 451 kelvin [1]."],
    "react": [
        "Thought: more.\nAction: docsearch\nAction Input: Zorblax",
        "Thought: I know it.\nFinal Answer: It runs at 451 kelvin [1].",
    ],
    "rewoo": [PLAN, "It runs at 451 kelvin, 177.85 °C [1]."],
}
# Among the steps of each mode's answer: together, every name and pattern below.
NAMES = {
    "fullqa": {"retrieve", "precheck", "answer"},
    "decompose": {"split", "Q1", "answer"},
    "react": {"step0:docsearch", "think1", "step1:docsearch", "think2"},
    "rewoo": {"plan", "work", "E1:docsearch", "E2:calculator", "solve"},
}
# What the chat showed for each built-in step name before the modes chose their labels.
WORDS = {
    "retrieve": "Searching the documents",
    "precheck": "Checking the question's terms against the documents",  # new in issue 16
    "answer": "Writing the answer",
    "solve": "Writing the answer",
    "plan": "Planning the tool calls",
    "work": "Running the plan",
    "split": "Splitting the question",
    "final": "Writing what was found",
}
NUMBERED = [
    (re.compile(r"E(\d+):(\w+)"), "Running #E{0} ({1})"),
    (re.compile(r"step(\d+):(\w+)"), "Step {0}: calling {1}"),
    (re.compile(r"think(\d+)"), "Thinking (step {0})"),
    (re.compile(r"Q(\d+)"), "Answering sub-question {0}"),
]


def _words(name: str) -> str:
    if name in WORDS:
        return WORDS[name]
    for pattern, words in NUMBERED:
        if match := pattern.fullmatch(name):
            return words.format(*match.groups())
    raise AssertionError(f"a built-in step name the chat had no words for: {name}")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> BaseApp:
    return scripted_app(
        tmp_path_factory.mktemp("labels"),
        {"replay": {"class": "ragloom_app.testing.ReplayLLM"}},
        {"reactor.md": "The Zorblax reactor runs at 451 kelvin.\n"},
    )


def _steps(app: BaseApp, mode: str, replies: list[str], **settings: object) -> list[object]:
    llm = app.llm()
    assert isinstance(llm, ReplayLLM)
    llm.replies[:] = replies
    events = list(ChatPage(app).ask("How hot is the reactor?", mode=mode, settings=settings))
    return [e for e in events if isinstance(e, StepStarted | StepFinished | PlanCreated)]


@pytest.mark.parametrize("mode", sorted(REPLIES))
def test_each_step_of_a_built_in_mode_has_the_words_the_chat_showed(
    app: BaseApp, mode: str
) -> None:
    steps = _steps(app, mode, REPLIES[mode])
    named = [s for s in steps if isinstance(s, StepStarted | StepFinished)]
    assert not [s for s in named if isinstance(s, StepFinished) and s.error]
    assert {s.name for s in named} >= NAMES[mode]
    assert {(s.name, s.label) for s in named} == {(s.name, _words(s.name)) for s in named}


def test_the_forced_answer_of_react_and_the_plans_have_their_words(app: BaseApp) -> None:
    steps = _steps(app, "react", ["Thought: more.\nAction: calculator\nAction Input: 1 + 1"])
    final = [s for s in steps if isinstance(s, StepStarted) and s.name == "final"]
    assert [s.label for s in final] == ["Writing what was found"]
    (rewoo,) = [s for s in _steps(app, "rewoo", REPLIES["rewoo"]) if isinstance(s, PlanCreated)]
    assert [(i.id, i.label, i.depends_on) for i in rewoo.steps] == [
        ("E1", "docsearch[reactor temperature]", ()),
        ("E2", "calculator[451 - 273.15]", ()),
    ]
    (split,) = [
        s for s in _steps(app, "decompose", REPLIES["decompose"]) if isinstance(s, PlanCreated)
    ]
    assert [(i.id, i.label, i.tool) for i in split.steps] == [
        ("Q1", "How hot is the reactor?", None)
    ]
