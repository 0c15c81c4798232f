"""The earlier turns a mode is given: the conversation's, or a client's own (the
OpenAI-compatible endpoint's messages); on the embedded stores, then on the servers."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ragloom.events import AnswerDelta, Event
from ragloom.llms.base import ChatMessage
from ragloom.retrieval import Retriever
from ragloom_app.pages.chat import ChatPage
from ragloom_app.reasoning.base import BaseReasoning, ReasoningInfo, ReasoningState
from tests.helpers.file_index import StoreSetup
from tests.helpers.scripted_app import scripted_app

SEEN: list[list[ChatMessage]] = []


class HistoryProbe(BaseReasoning):
    """Answers with how many earlier turns it was given, and keeps them in SEEN."""

    @classmethod
    def get_info(cls) -> ReasoningInfo:
        return ReasoningInfo("probe", "Probe", "Counts the earlier turns.")

    @classmethod
    def get_pipeline(
        cls, settings: Mapping[str, Any], state: ReasoningState, retrievers: Sequence[Retriever]
    ) -> BaseReasoning:
        SEEN.append(list(state.history))
        return cls()

    def stream(self, question: str) -> Iterator[Event]:
        yield AnswerDelta(f"{len(SEEN[-1])} earlier turns.")


@pytest.fixture
def page(tmp_path: Path, stores: StoreSetup) -> ChatPage:
    """A chat page of an app with the probe mode, on ``stores``."""
    app = scripted_app(
        tmp_path, {"s": {"class": "tests.helpers.scripted_llm.ScriptedLLM"}}, **stores.servers()
    )
    app.reasonings["probe"] = HistoryProbe
    return ChatPage(app)


def test_a_client_history_reaches_the_mode_and_a_conversation_uses_its_own(
    page: ChatPage,
) -> None:
    history = [ChatMessage("user", "Hi"), ChatMessage("assistant", "Hello.")]
    list(page.ask("And now?", mode="probe", history=history))
    assert SEEN[-1] == history
    cid = page.conversations.create()
    list(page.ask("First?", mode="probe", conversation_id=cid))
    list(page.ask("Second?", mode="probe", conversation_id=cid))
    assert [m.content for m in SEEN[-1]] == ["First?", "0 earlier turns."]


def test_a_conversation_deleted_mid_answer_is_said_so_and_nothing_more_is_saved(
    tmp_path: Path, stores: StoreSetup
) -> None:
    import pytest

    from ragloom_app.pages.chat import UnknownConversationError

    app = scripted_app(
        tmp_path, {"s": {"class": "tests.helpers.scripted_llm.ScriptedLLM"}}, **stores.servers()
    )
    from tests.helpers.conversation_deleter import DeletesItsConversation

    app.reasonings["deleter"] = DeletesItsConversation
    page = ChatPage(app)
    DeletesItsConversation.store = page.conversations
    cid = page.conversations.create()
    with pytest.raises(UnknownConversationError, match="deleted while it was answered"):
        list(page.ask("Anything?", mode="deleter", conversation_id=cid))
    assert page.conversations.get(cid) is None and page.conversations.messages(cid) == []


def test_fullqa_follows_a_conversation_in_its_search_and_its_prompt(
    tmp_path: Path, stores: StoreSetup
) -> None:
    from ragloom.llms.replay import ReplayLLM
    from ragloom_app.reasoning.fullqa import search_query

    app = scripted_app(
        tmp_path,
        {"replay": {"class": "ragloom.llms.replay.ReplayLLM", "replies": ["451 kelvin [1]."]}},
        {
            "reactor.md": "The Zorblax reactor runs at 451 kelvin.",
            "history.md": "The Zorblax reactor was commissioned in 1962 in Lund.",
        },
        **stores.servers(),
    )
    llm = app.llm()
    assert isinstance(llm, ReplayLLM)
    page = ChatPage(app)
    cid = page.conversations.create()
    list(page.ask("How hot does the Zorblax reactor run?", mode="fullqa", conversation_id=cid))
    llm.replies[:] = ["It was commissioned in 1962 [1]."]
    *_, finished = page.ask("And when was it commissioned?", mode="fullqa", conversation_id=cid)
    prompt = llm.prompts[-1][-1].content
    earlier = prompt.index("Earlier in this conversation:")
    assert earlier < prompt.index("Question: And when was it commissioned?")
    assert "User: How hot does the Zorblax reactor run?" in prompt
    # Without its [1]: that numbered the first answer's sources, not this prompt's.
    assert "Assistant: 451 kelvin.\n" in prompt
    # The follow-up alone names no reactor: the search carried the question before it.
    assert [c.source for c in finished.record.citations] == ["history.md"]
    history = [ChatMessage("user", "How hot is the reactor?"), ChatMessage("assistant", "Hot.")]
    assert search_query("And its age?", history) == "How hot is the reactor? And its age?"
    assert search_query("How hot is it?", []) == "How hot is it?"
    # Without a conversation the prompt is as it always was.
    list(page.ask("How hot does the Zorblax reactor run?", mode="fullqa"))
    assert "Earlier in this conversation" not in llm.prompts[-1][-1].content


def test_an_answer_its_caller_stops_listening_to_is_stored_as_far_as_it_went(
    tmp_path: Path, stores: StoreSetup
) -> None:
    """An API client that leaves mid-stream closes the answer: its question was stored,
    and once the conversation kept it with no answer (the next question then followed
    an orphan in the history)."""
    app = scripted_app(
        tmp_path, {"s": {"class": "tests.helpers.scripted_llm.ScriptedLLM"}}, **stores.servers()
    )
    app.reasonings["probe"] = HistoryProbe
    page = ChatPage(app)
    cid = page.conversations.create()
    answer = page.ask("First?", mode="probe", conversation_id=cid)
    next(answer)  # the first event; then the caller goes
    answer.close()
    stored = [(m.role, m.content) for m in page.conversations.messages(cid)]
    assert stored == [
        ("user", "First?"),
        ("assistant", "0 earlier turns.\n\n(Stopped before the answer was finished.)"),
    ]


def test_one_answer_at_a_time_in_a_conversation_and_the_next_sees_it(page: ChatPage) -> None:
    from ragloom_app.pages.chat import ConversationBusyError

    cid, other = page.conversations.create(), page.conversations.create()
    first = page.ask("First?", mode="probe", conversation_id=cid)
    next(first)  # under way: its question stored, its answer being written
    with pytest.raises(ConversationBusyError, match="an answer is being written"):
        next(page.ask("Second?", mode="probe", conversation_id=cid))
    list(page.ask("Elsewhere?", mode="probe", conversation_id=other))  # not held up
    list(first)
    list(page.ask("Second?", mode="probe", conversation_id=cid))
    assert [m.content for m in SEEN[-1]] == ["First?", "0 earlier turns."]
    # A stopped answer lets the conversation go too, once its end is stored.
    stopped = page.ask("Third?", mode="probe", conversation_id=cid)
    next(stopped)
    stopped.close()
    list(page.ask("Fourth?", mode="probe", conversation_id=cid))
    assert [m.role for m in page.conversations.messages(cid)] == ["user", "assistant"] * 4
