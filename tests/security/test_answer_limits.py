"""A question has a length limit and an answer a deadline; other work goes on meanwhile.

A huge question would be embedded, searched, put in every prompt and stored; an answer
that never ends (a slow or looping model) would hold the one answer slot of the UI. The
question is refused before anything happens; the answer stops at its deadline, between
two streamed tokens, keeping what it had and saying it was cut short.
"""

from __future__ import annotations

import threading
import time
import warnings
from pathlib import Path

import pytest

from ragloom.events import StepFinished
from ragloom_app.app import BaseApp
from ragloom_app.pages.chat import AnswerFinished, ChatPage, QuestionTooLongError
from ragloom_app.ui.chat_handlers import ChatHandlers
from tests.helpers.heartbeat import Heartbeat
from tests.helpers.misbehaving_llms import SlowLLM
from tests.helpers.scripted_app import scripted_app

pytestmark = pytest.mark.security

REACTOR = "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin.\n"
QUESTION = "How hot does the Zorblax reactor run?"
REPLAY = {"class": "ragloom_app.testing.ReplayLLM", "replies": ["It runs at 451 kelvin [1]."]}
# Unbounded, 400 words at 0.05 s each would take 20 s.
SLOW = {
    "class": "tests.helpers.misbehaving_llms.SlowLLM",
    "replies": [" ".join(f"w{i}" for i in range(400))],
    "delay": 0.05,
}
DEADLINE = 1.0


def _record(events: list) -> dict:
    assert isinstance(events[-1], AnswerFinished)
    return events[-1].record.to_dict()


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> BaseApp:
    return scripted_app(tmp_path_factory.mktemp("fast"), {"replay": REPLAY}, {"r.md": REACTOR})


def test_a_question_past_the_limit_is_refused_before_anything_happens(app: BaseApp) -> None:
    page = ChatPage(app)
    conversation = page.conversations.create()
    question = "Why? " * 200_000  # 1 MB
    started = time.perf_counter()
    with pytest.raises(QuestionTooLongError) as refused:
        next(page.ask(question, conversation_id=conversation))
    took = time.perf_counter() - started
    assert str(refused.value) == (
        "the question is 1,000,000 characters long; the limit is 4,000 (MAX_QUESTION_CHARS): "
        "shorten it"
    )
    assert took < 0.1, took
    assert page.conversations.messages(conversation) == []  # nothing stored
    # A question at the limit is answered, and so is the next one.
    at_limit = QUESTION + " " * (app.settings.max_question_chars - len(QUESTION))
    assert "451 kelvin" in _record(list(page.ask(at_limit)))["answer"]
    assert "451 kelvin" in _record(list(page.ask(QUESTION)))["answer"]


def test_the_chat_refuses_it_with_the_limit_and_keeps_the_inputs(app: BaseApp) -> None:
    handlers = ChatHandlers(ChatPage(app))
    before = len(handlers.store.list())
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        (outputs,) = list(handlers.respond("x" * 4001, None, None))
    (warning,) = [str(w.message) for w in shown if "not sent" in str(w.message)]
    assert warning == (
        "The question was not sent: the question is 4,001 characters long; the limit is "
        "4,000 (MAX_QUESTION_CHARS): shorten it."
    )
    assert all(output == {"__type__": "update"} for output in outputs)  # nothing changes
    assert len(handlers.store.list()) == before  # no conversation was created


def test_the_deadline_cuts_a_slow_answer_short_while_others_are_served(
    tmp_path: Path, app: BaseApp
) -> None:
    slow = scripted_app(
        tmp_path, {"slow": SLOW}, {"r.md": REACTOR}, answer_deadline_seconds=DEADLINE
    )
    served: list[float] = []
    done = threading.Event()

    def other_user() -> None:
        page = ChatPage(app)
        while not done.is_set():
            started = time.perf_counter()
            assert "451" in _record(list(page.ask(QUESTION)))["answer"]
            served.append(time.perf_counter() - started)

    helper = threading.Thread(target=other_user, daemon=True)
    with Heartbeat() as beat:
        helper.start()
        started = time.perf_counter()
        events = list(ChatPage(slow).ask(QUESTION))
        took = time.perf_counter() - started
        done.set()
        helper.join(timeout=30)
    record = _record(events)
    llm = slow.llm()
    assert isinstance(llm, SlowLLM)
    # Stopped at the first token past the deadline: the model's stream was closed too. The
    # other user's questions (search, checks) compete for the GIL meanwhile: on a loaded CI
    # machine the cut came 0.73 s late once, so a second of slack (the answer asked 20 s).
    assert DEADLINE <= took < DEADLINE + 1.0, took
    assert len(llm.streamed) < 40
    kept = record["answer"].split("\n\n")[0]
    assert kept == "".join(llm.streamed).strip() and kept.startswith("w0 w1 w2")
    assert record["answer"].endswith(
        "(Cut short: the answer took longer than the limit of 1 s (ANSWER_DEADLINE_SECONDS).)"
    )
    (step,) = [e for e in events if isinstance(e, StepFinished) and e.name == "deadline"]
    assert step.error and "ANSWER_DEADLINE_SECONDS" in step.error
    assert beat.longest_pause < 0.5, beat.longest_pause
    assert served, "no other question was answered meanwhile"
