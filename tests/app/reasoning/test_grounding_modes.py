"""Every built-in mode's answer goes through the grounding check, and can be let off it.

Over a scripted LLM and a real index (SQLite, Chroma, BM25): each mode answers with one
sentence its passage supports and one it does not; the record says which, a wholly
unsupported answer becomes a decline listing the closest passages, and the per-mode
setting and the app's ``GROUNDING_CHECK`` each turn the check off.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.events import AnswerRecord, GroundingChecked
from ragloom_app.app import BaseApp
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.testing import ReplayLLM
from tests.helpers.scripted_app import scripted_app

PLAN = (
    "#Plan1: Find the temperature.\n#E1 = docsearch[reactor temperature]\n"
    "#Plan2: Convert it.\n#E2 = calculator[451 - 273.15]\n"
)
PARTLY = "It runs at 451 kelvin [1]. It was built in 1962 [1]."
WRONG = "It runs at 900 kelvin [1]."
# What each mode's LLM says before its final answer.
BEFORE = {
    "fullqa": [],
    "decompose": ["1. How hot is the reactor?\n", "451 kelvin [1]."],
    "react": ["Thought: more.\nAction: docsearch\nAction Input: Zorblax"],
    "rewoo": [PLAN],
}
DOCUMENTS = {"reactor.md": "The Zorblax reactor runs at 451 kelvin.\n"}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> BaseApp:
    llms = {"replay": {"class": "ragloom_app.testing.ReplayLLM"}}
    return scripted_app(tmp_path_factory.mktemp("grounding"), llms, DOCUMENTS)


def _ask(app: BaseApp, mode: str, final: str, **settings: object) -> tuple[AnswerRecord, list]:
    llm = app.llm()
    assert isinstance(llm, ReplayLLM)
    reply = f"Thought: I know it.\nFinal Answer: {final}" if mode == "react" else final
    llm.replies[:] = [*BEFORE[mode], reply]
    events = list(ChatPage(app).ask("How hot is the reactor?", mode=mode, settings=settings))
    (finished,) = [e for e in events if isinstance(e, AnswerFinished)]
    return finished.record, events


@pytest.mark.parametrize("mode", sorted(BEFORE))
def test_each_mode_reports_which_sentences_its_passages_support(app: BaseApp, mode: str) -> None:
    record, events = _ask(app, mode, PARTLY)
    assert [type(e) for e in events].count(GroundingChecked) == 1
    report = record.grounding
    assert report is not None and report.status == "partly" and not report.declined
    assert record.answer.endswith(PARTLY)  # marked, not removed
    found, invented = report.sentences
    assert found.supported and found.supported_by == [1]
    assert not invented.supported and invented.unsupported == ["1962"]
    data = record.to_dict()
    assert {"answer", "mode", "citations", "steps", "usage", "grounding"} <= set(data)
    assert data["grounding"]["sentences"][1]["unsupported"] == ["1962"]


@pytest.mark.parametrize("mode", sorted(BEFORE))
def test_an_answer_with_nothing_supported_becomes_a_decline(app: BaseApp, mode: str) -> None:
    record, _ = _ask(app, mode, WRONG)
    assert record.answer.startswith("The documents I found do not support an answer")
    assert "900" not in record.answer
    assert "reactor.md" in record.answer
    assert [c.source for c in record.citations] == ["reactor.md"]
    assert record.grounding is not None and record.grounding.declined
    assert record.grounding.sentences[0].unsupported == ["900"]


@pytest.mark.parametrize("mode", sorted(BEFORE))
def test_the_mode_setting_turns_the_check_off(app: BaseApp, mode: str) -> None:
    record, events = _ask(app, mode, WRONG, check_grounding=False)
    assert record.grounding is None and record.to_dict()["grounding"] is None
    assert record.answer.endswith(WRONG)
    assert not any(isinstance(e, GroundingChecked) for e in events)


def test_a_calculators_result_supports_rewoos_answer(app: BaseApp) -> None:
    record, _ = _ask(app, "rewoo", "It runs at 451 kelvin, that is 177.85 °C [1].")
    assert record.grounding is not None and record.grounding.status == "supported"


def test_the_app_setting_turns_the_check_off_for_every_mode(tmp_path: Path) -> None:
    llms = {"replay": {"class": "ragloom_app.testing.ReplayLLM"}}
    app = scripted_app(tmp_path, llms, DOCUMENTS, grounding_check=False)
    for mode in sorted(BEFORE):
        record, _ = _ask(app, mode, WRONG)
        assert record.grounding is None and record.answer.endswith(WRONG), mode
