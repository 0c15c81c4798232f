"""What a user is told when something fails: words and a log reference, no stack trace,
no file path, no endpoint URL; the log holds the whole story under that reference.

Before, the chat showed ``type(exc).__name__: exc`` (an ``LLMError`` names the endpoint
it could not reach, an ``OSError`` the file it could not open) and the answer repeated
it; a stranger at the UI learnt how the server is laid out and what it talks to.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from ragloom.events import StepFinished
from ragloom_app.app import BaseApp
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.ui.chat_handlers import ChatHandlers
from tests.helpers.misbehaving_llms import FailingLLM
from tests.helpers.scripted_app import scripted_app

pytestmark = pytest.mark.security

REACTOR = "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin.\n"
QUESTION = "How hot does the Zorblax reactor run?"
ENDPOINT = "http://10.9.8.7:8000/v1"
SECRET_PATH = "/srv/ragloom/models/private.gguf"
FAILING = {
    "class": "tests.helpers.misbehaving_llms.FailingLLM",
    "message": f"cannot reach {ENDPOINT}: Connection refused ({SECRET_PATH})",
}
REFERENCE = re.compile(r"\(log reference ([0-9a-f]{8})\)")
LEAKS = re.compile(r"Traceback|File \"|10\.9\.8\.7|/srv/|https?://|Error:|LLMError|RuntimeError")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> BaseApp:
    return scripted_app(tmp_path_factory.mktemp("app"), {"failing": FAILING}, {"r.md": REACTOR})


@pytest.fixture
def llm(app: BaseApp) -> FailingLLM:
    llm = app.llm()
    assert isinstance(llm, FailingLLM)
    llm.unexpected, llm.words_first = False, 0
    return llm


def _respond(handlers: ChatHandlers, question: str) -> tuple[list[Any], list[str]]:
    """Every output of the chat's answer handler, and the warnings it showed."""
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        outputs = list(handlers.respond(question, None, None))
    return outputs, [str(w.message) for w in shown]


def _seen(outputs: list[Any], shown: list[str]) -> str:
    """All the text a user of the page could see: chat messages and warnings."""
    chats = [out[0] for out in outputs if isinstance(out[0], list)]
    return "\n".join([*(m["content"] for chat in chats for m in chat), *shown])


def _logged(caplog: pytest.LogCaptureFixture, reference: str) -> str:
    """The log record under ``reference`` with its stack trace."""
    (record,) = [r for r in caplog.records if reference in r.getMessage() and r.exc_info]
    assert record.exc_info is not None
    return caplog.text


def test_an_llm_failure_naming_its_endpoint_is_told_in_words(
    app: BaseApp, llm: FailingLLM, caplog: pytest.LogCaptureFixture
) -> None:
    outputs, shown = _respond(ChatHandlers(ChatPage(app)), QUESTION)
    seen = _seen(outputs, shown)
    assert not LEAKS.search(seen), seen
    answer = outputs[-1][0][-1]["content"]
    assert answer.startswith(
        "<p>Sorry, answering failed: cannot reach [address hidden]: Connection refused "
        "([path hidden]) (log reference "
    ), answer
    (reference,) = set(REFERENCE.findall(seen))
    assert ENDPOINT in _logged(caplog, reference) and "Traceback" in caplog.text


def test_an_unexpected_failure_says_only_its_kind(
    app: BaseApp, llm: FailingLLM, caplog: pytest.LogCaptureFixture
) -> None:
    llm.unexpected = True
    events = list(ChatPage(app).ask(QUESTION))
    record = events[-1].record.to_dict() if isinstance(events[-1], AnswerFinished) else {}
    assert re.fullmatch(
        r"Sorry, answering failed: something unexpected went wrong inside Ragloom "
        r"\(log reference [0-9a-f]{8}\)",
        record["answer"],
    )
    (error,) = [e.error for e in events if isinstance(e, StepFinished) and e.name == "error"]
    assert error and not LEAKS.search(error) and record["answer"].endswith(error[-25:])
    (reference,) = REFERENCE.findall(record["answer"])
    assert SECRET_PATH in _logged(caplog, reference)


def test_what_was_written_before_a_failure_is_kept(app: BaseApp, llm: FailingLLM) -> None:
    llm.words_first = 3
    record = list(ChatPage(app).ask(QUESTION))[-1].record.to_dict()  # type: ignore[union-attr]
    written, said = record["answer"].split("\n\n")
    assert written == "The documents say"
    assert said.startswith("(Answering failed: cannot reach [address hidden]")


def test_a_database_failure_is_told_in_words(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    handlers = ChatHandlers(ChatPage(app))

    def broken(*_: Any) -> Any:
        raise OperationalError("SELECT", {}, Exception(f"unable to open {SECRET_PATH}.db"))

    monkeypatch.setattr(handlers.store, "messages", broken)
    outputs, shown = _respond(handlers, QUESTION)
    with warnings.catch_warnings(record=True) as opened:
        warnings.simplefilter("always")
        handlers.open_conversation("some-id")
    seen = _seen(outputs, [*shown, *(str(w.message) for w in opened)])
    assert not LEAKS.search(seen), seen
    assert "Opening the conversation failed: the database could not be read or written" in seen
    for reference in set(REFERENCE.findall(seen)):
        assert SECRET_PATH in _logged(caplog, reference)


def test_other_questions_are_answered_meanwhile(tmp_path: Path, app: BaseApp) -> None:
    # The failures above left nothing broken: another app in this process answers.
    good = scripted_app(
        tmp_path, {"replay": {"class": "ragloom_app.testing.ReplayLLM"}}, {"r.md": REACTOR}
    )
    outputs, shown = _respond(ChatHandlers(ChatPage(good)), QUESTION)
    assert outputs[-1][0][-1]["content"] == "<p>The documents say so [1].</p>"
    assert not shown
