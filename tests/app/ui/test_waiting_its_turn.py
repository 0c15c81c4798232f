"""While the local model answers others, a question says it is waiting its turn, and how
many answers are ahead; an idle model (or an endpoint, which has no line here) says
nothing of the kind."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from ragloom.llms.fair_lock import FairLock
from ragloom.llms.replay import ReplayLLM
from ragloom_app.app import BaseApp
from ragloom_app.pages.chat import ChatPage
from ragloom_app.ui.chat_handlers import ChatHandlers
from tests.helpers.api_server import replay_app


class LineReplayLLM(ReplayLLM):
    """The replay LLM behind a :class:`FairLock`, as the local model is."""

    line = FairLock()

    @property
    def in_line(self) -> int:
        return self.line.in_line


@pytest.fixture
def app(tmp_path: Path) -> BaseApp:
    started = replay_app(tmp_path)
    started._llms["replay"] = LineReplayLLM(replies=["The reactor runs hot [1]."])
    return started


def _first_status(app: BaseApp) -> str:
    first = next(iter(ChatHandlers(ChatPage(app)).respond("How hot?", "fullqa", None)))
    chat = first[0]
    return str(chat[-1]["content"])


def test_a_question_behind_two_answers_says_it_waits_its_turn(app: BaseApp) -> None:
    LineReplayLLM.line.acquire()  # one answer generating...
    waiting = _in_line_waiter()  # ...and one waiting
    try:
        status = _first_status(app)
    finally:
        LineReplayLLM.line.release()
        waiting.join(timeout=10)
    assert "Waiting its turn: 2 answers ahead of this one on the local model" in status


def test_an_idle_model_starts_with_the_search(app: BaseApp) -> None:
    assert LineReplayLLM.line.in_line == 0
    assert "Searching the documents" in _first_status(app)


def _in_line_waiter() -> threading.Thread:
    """A thread waiting its turn behind the answer holding the lock."""
    thread = threading.Thread(
        target=lambda: (LineReplayLLM.line.acquire(), LineReplayLLM.line.release())
    )
    thread.start()
    deadline = time.monotonic() + 10
    while LineReplayLLM.line.in_line < 2:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    return thread


def test_the_steps_before_the_answer_keep_saying_it_waits_while_the_model_is_busy(
    app: BaseApp,
) -> None:
    """Each step used to replace the waiting words with its own ("Writing the answer")
    while its call to the model still waited for the answer before it."""
    LineReplayLLM.line.acquire()  # another answer generating throughout
    try:
        question = "How hot does the Zorblax reactor run?"
        outputs = list(ChatHandlers(ChatPage(app)).respond(question, "fullqa", None))
    finally:
        LineReplayLLM.line.release()
    # A status is the chat's last message in italics (an answer is not).
    statuses = [
        str(chat[-1]["content"])
        for chat, *_ in outputs
        if isinstance(chat, list) and str(chat[-1]["content"]).startswith("<p><em>")
    ]
    assert len(statuses) >= 2  # the first, and at least one step's
    assert all("Waiting its turn: 1 answer ahead of this one" in s for s in statuses), statuses
    assert not str(outputs[-1][0][-1]["content"]).startswith("<p><em>")  # then, its answer
