"""Answers through /api/v1 that end before they are whole, against a live server: a client
that leaves mid-stream, a conversation deleted while it is answered, the database going
away. Each ends as its response says, streamed or not, and the server goes on answering."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy.exc import OperationalError

from ragloom_app.conversations import ConversationStore
from tests.helpers.api_server import ANSWER, LiveServer, api, live_server, sse_events
from tests.helpers.conversation_deleter import DeletesItsConversation

__all__ = ["api", "live_server"]


@contextmanager
def _deleting_mode(live_server: LiveServer) -> Iterator[None]:
    """The mode ``deleter``, which deletes its own conversation as it answers, registered
    for the block."""
    DeletesItsConversation.store = ConversationStore(live_server.app.engine)
    live_server.app.reasonings["deleter"] = DeletesItsConversation
    try:
        yield
    finally:
        del live_server.app.reasonings["deleter"]


def test_a_client_that_leaves_mid_stream_leaves_the_server_answering_others(
    api: httpx.Client,
) -> None:
    cid = api.post("/conversations").json()["id"]
    body = {"question": "How hot is the reactor?", "stream": True}
    with api.stream("POST", f"/conversations/{cid}/ask", json=body) as response:
        first = next(response.iter_lines())
        assert first.startswith("event: ")
    # Gone after one event: the next question, in the same conversation, is answered once
    # the first answer's work has ended (at its next event); until then it waits its turn.
    deadline = time.monotonic() + 10
    while (
        again := api.post(f"/conversations/{cid}/ask", json={"question": "Hot?"})
    ).status_code == 409:
        assert again.json()["error"]["code"] == "conversation_busy"
        assert again.headers["Retry-After"] == "1" and time.monotonic() < deadline
        time.sleep(0.05)
    assert again.status_code == 200 and again.json()["answer"] == ANSWER
    # Each question is followed by its answer: the first as far as it went, if stopped.
    turns = api.get(f"/conversations/{cid}").json()["messages"]
    assert [(t["role"], t["content"][:4]) for t in turns] == [
        ("user", "How "),
        ("assistant", turns[1]["content"][:4]),
        ("user", "Hot?"),
        ("assistant", ANSWER[:4]),
    ]


def test_a_conversation_deleted_mid_answer_is_a_404_saying_so(
    live_server: LiveServer, api: httpx.Client
) -> None:
    with _deleting_mode(live_server):
        cid = api.post("/conversations").json()["id"]
        answer = api.post(f"/conversations/{cid}/ask", json={"question": "?", "mode": "deleter"})
    assert answer.status_code == 404, answer.text
    assert "deleted while it was answered" in answer.json()["error"]["message"]


def _stream_error(api: httpx.Client, cid: str, body: dict[str, Any]) -> dict[str, Any]:
    """The error event a streamed answer ended with (it began: the status line was 200)."""
    with api.stream("POST", f"/conversations/{cid}/ask", json={**body, "stream": True}) as sent:
        assert sent.status_code == 200
        events = sse_events(sent.read().decode())
    name, data = events[-1]
    assert name == "error", events
    return data["error"]  # type: ignore[no-any-return]


def test_a_conversation_deleted_mid_stream_ends_it_in_the_404s_code(
    live_server: LiveServer, api: httpx.Client
) -> None:
    with _deleting_mode(live_server):
        cid = api.post("/conversations").json()["id"]
        error = _stream_error(api, cid, {"question": "?", "mode": "deleter"})
    # What the JSON answer says with its status (above), the stream's event says too.
    assert (error["code"], error["type"]) == ("not_found", "not_found_error")
    assert "deleted while it was answered" in error["message"]


def test_the_database_going_away_mid_answer_is_unavailable_streamed_or_not(
    api: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = ConversationStore.add_message

    def answer_not_saved(
        self: ConversationStore, cid: str, role: str, *args: Any, **kw: Any
    ) -> None:
        if role == "assistant":  # the question was stored; then the server went away
            raise OperationalError("INSERT", {}, Exception("server closed the connection"))
        saved(self, cid, role, *args, **kw)

    monkeypatch.setattr(ConversationStore, "add_message", answer_not_saved)
    cid = api.post("/conversations").json()["id"]
    whole = api.post(f"/conversations/{cid}/ask", json={"question": "How hot?"})
    assert whole.status_code == 503 and whole.json()["error"]["code"] == "unavailable"
    error = _stream_error(api, cid, {"question": "How hot?"})
    assert (error["code"], error["type"]) == ("unavailable", "unavailable_error")
    assert error["message"] == whole.json()["error"]["message"]
