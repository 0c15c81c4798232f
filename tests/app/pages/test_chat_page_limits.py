"""ChatPage's bounds: the deadline between an agent's steps, the settings of the limits,
an answer whose every index fails to give retrievers, and a mode's malformed event."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ragloom.events import AnswerDelta, Event
from ragloom.llms.base import ChatMessage
from ragloom.llms.llamacpp import LlamaCppChat
from ragloom.retrieval import Retriever
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.reasoning.base import BaseReasoning, ReasoningInfo, ReasoningState
from ragloom_app.settings import AppSettings, SettingsError
from tests.helpers.misbehaving_llms import SlowLLM
from tests.helpers.patient_tool import PatientTool
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
    file.write_text("MIN_FILE_SECONDS = 600\nMAX_FILE_SECONDS = 100\n")
    with pytest.raises(SettingsError, match=r"MIN_FILE_SECONDS \(600\) is more than MAX_FILE"):
        AppSettings.load(file)


def test_when_every_index_fails_to_give_retrievers_the_error_is_raised(tmp_path: Path) -> None:
    app = scripted_app(tmp_path, {"replay": {"class": "ragloom_app.testing.ReplayLLM"}})
    with pytest.raises(ValueError, match="retrieval_mode must be one of"):
        ChatPage(app).create_pipeline(None, {"retrieval_mode": "telepathy"})


class HalfWritten(BaseReasoning):
    """A plugin's mode with a bug: its second piece of answer is not text."""

    @classmethod
    def get_info(cls) -> ReasoningInfo:
        return ReasoningInfo("half", "Half", "Writes half an answer.")

    @classmethod
    def get_pipeline(
        cls, settings: Mapping[str, Any], state: ReasoningState, retrievers: Sequence[Retriever]
    ) -> BaseReasoning:
        return cls()

    def stream(self, question: str) -> Iterator[Event]:
        yield AnswerDelta("It runs at")
        yield AnswerDelta(None)  # type: ignore[arg-type]


def test_a_mode_that_sends_a_malformed_event_ends_its_answer_saying_why_and_both_turns_stay(
    tmp_path: Path,
) -> None:
    """Once, the collector failed on it after the question's turn was stored: the
    conversation kept a question with no answer, and the user a bare failure."""
    app = scripted_app(tmp_path, {"s": {"class": "tests.helpers.scripted_llm.ScriptedLLM"}})
    app.reasonings["half"] = HalfWritten
    page = ChatPage(app)
    cid = page.conversations.create()
    *_, finished = page.ask("How hot is it?", mode="half", conversation_id=cid)
    assert isinstance(finished, AnswerFinished)
    assert finished.record.answer.startswith(
        "It runs at\n\n(Answering failed: the reasoning mode sent an event Ragloom cannot use "
        "(AnswerDelta.text must be text); its plugin needs mending (log reference "
    )
    stored = page.conversations.messages(cid)
    assert [(m.role, m.content) for m in stored] == [
        ("user", "How hot is it?"),
        ("assistant", finished.record.answer),
    ]


def test_the_deadline_also_cuts_a_tool_call_under_way(tmp_path: Path) -> None:
    """Checked only between events, it once let a hung tool hold the answer for three
    tries of 60 s each: the agent's tool calls are now cut to the answer's deadline."""
    reply = "Thought: I ask the service.\nAction: patient\nAction Input: reactor"
    script = {"class": "tests.helpers.scripted_llm.ScriptedLLM", "replies": [reply]}
    app = scripted_app(tmp_path, {"s": script}, {"r.md": REACTOR}, answer_deadline_seconds=1.0)
    app.tools.register(PatientTool)
    started = time.monotonic()
    *_, finished = ChatPage(app).ask(
        "How hot is the reactor?", mode="react", settings={"search_first": False}
    )
    assert time.monotonic() - started < 5
    assert isinstance(finished, AnswerFinished)
    assert "longer than the limit of 1 s (ANSWER_DEADLINE_SECONDS)" in finished.record.answer


@pytest.mark.llm
@pytest.mark.parametrize("mode", ["fullqa", "decompose", "react", "rewoo", "auto"])
def test_an_answer_waiting_for_the_busy_local_model_ends_at_its_deadline(
    tmp_path: Path, mode: str
) -> None:
    """It once waited for the model without a deadline, behind every answer ahead of it,
    only to be cut short at its first word (and its conversation's hold could lapse)."""
    local = {"class": "ragloom.llms.llamacpp.LlamaCppChat"}
    app = scripted_app(tmp_path, {"local": local}, {"r.md": REACTOR}, answer_deadline_seconds=2.0)
    other_answer = LlamaCppChat().stream([ChatMessage("user", "Count to a thousand.")])
    next(other_answer)  # generating: it holds the model until it ends
    # Should the wait not end at the deadline, the test fails instead of waiting forever.
    backstop = threading.Timer(20, other_answer.close)
    backstop.start()
    try:
        started = time.monotonic()
        *_, finished = ChatPage(app).ask("How hot is the reactor?", mode=mode)
        waited = time.monotonic() - started
    finally:
        backstop.cancel()
        other_answer.close()
    assert isinstance(finished, AnswerFinished) and waited < 10
    record = finished.record.to_dict()
    assert record["answer"].startswith("Sorry, I could not answer: llama.cpp/qwen2.5")
    assert record["answer"].endswith(
        "was answering other questions until this answer's deadline came; "
        "ask again when it is less busy."
    )
    assert record["steps"][-1]["step"] == "busy"
    # The model never had the question: no tokens are counted for it.
    assert not [step for step in record["steps"] if step["event"] == "usage"]


def test_a_call_cut_short_by_the_deadline_still_counts_its_tokens(tmp_path: Path) -> None:
    """Its usage comes with its last item, which a cut call never reaches: the answer once
    counted none of the words it had streamed, nor the prompt they answered."""
    slow = {
        "class": "tests.helpers.misbehaving_llms.SlowLLM",
        "replies": ["It " * 60 + "runs at 451 kelvin [1]."],
        "delay": 0.05,
    }
    app = scripted_app(tmp_path, {"slow": slow}, {"r.md": REACTOR}, answer_deadline_seconds=1.0)
    *_, finished = ChatPage(app).ask("How hot is the reactor?", mode="fullqa")
    assert isinstance(finished, AnswerFinished)
    record = finished.record.to_dict()
    assert "(Cut short: the answer took longer than the limit of 1 s" in record["answer"]
    (cut,) = [step for step in record["steps"] if step["step"] == "llm:cut-short"]
    llm = app.llm()
    assert isinstance(llm, SlowLLM)
    assert 0 < cut["completion_tokens"] == len(llm.streamed) < 64
    assert cut["prompt_tokens"] > 0
    assert record["usage"]["llm_calls"] >= 1
    assert record["usage"]["completion_tokens"] >= cut["completion_tokens"]
