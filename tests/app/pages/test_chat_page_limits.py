"""ChatPage's bounds: the deadline between an agent's steps, the settings of the limits,
and an answer whose every index fails to give retrievers."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.settings import AppSettings, SettingsError
from tests.helpers.misbehaving_llms import SlowLLM
from tests.helpers.scripted_app import scripted_app

REACTOR = "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin.\n"
PLAN = "#Plan1: Search the notes for it.\n#E1 = docsearch[reactor temperature in kelvin]\n"


def test_the_deadline_stops_an_agent_between_its_steps(tmp_path: Path) -> None:
    # The planner's call cannot be cut (ReWOO reads it whole): the answer stops at the
    # first event after it, before the plan runs or the solver is called.
    slow = {"class": "tests.helpers.misbehaving_llms.SlowLLM", "replies": [PLAN, "451 K [1]."]}
    app = scripted_app(tmp_path, {"slow": slow}, {"r.md": REACTOR}, answer_deadline_seconds=0.2)
    events = list(ChatPage(app).ask("How hot is the reactor?", mode="rewoo"))
    record = events[-1].record.to_dict() if isinstance(events[-1], AnswerFinished) else {}
    assert record["answer"] == (
        "Sorry, I could not answer: the answer took longer than the limit of 0.2 s "
        "(ANSWER_DEADLINE_SECONDS)."
    )
    llm = app.llm()
    assert isinstance(llm, SlowLLM) and len(llm.prompts) == 1  # the planner's call only
    assert [s["step"] for s in record["steps"] if s["event"] == "finished"][-1] == "deadline"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_question_chars", 0),
        ("max_question_chars", "4000"),
        ("max_question_chars", True),
        ("answer_deadline_seconds", -1),
        ("selectable_llms", "openai"),
    ],
)
def test_limits_must_be_positive_numbers(field: str, value: object) -> None:
    with pytest.raises(SettingsError, match=field.upper()):
        AppSettings(**{field: value})


def test_limits_from_a_settings_file_are_checked(tmp_path: Path) -> None:
    file = tmp_path / "flowsettings.py"
    file.write_text("MAX_QUESTION_CHARS = 120\nANSWER_DEADLINE_SECONDS = 30\n")
    settings = AppSettings.load(file)
    assert (settings.max_question_chars, settings.answer_deadline_seconds) == (120, 30)
    file.write_text("ANSWER_DEADLINE_SECONDS = 0\n")
    with pytest.raises(SettingsError, match="ANSWER_DEADLINE_SECONDS: must be a positive"):
        AppSettings.load(file)


def test_when_every_index_fails_to_give_retrievers_the_error_is_raised(tmp_path: Path) -> None:
    app = scripted_app(tmp_path, {"replay": {"class": "ragloom_app.testing.ReplayLLM"}})
    with pytest.raises(ValueError, match="retrieval_mode must be one of"):
        ChatPage(app).create_pipeline(None, {"retrieval_mode": "telepathy"})
