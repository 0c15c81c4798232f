"""An answer that fails gives the chat its inputs back, whatever else fails with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from ragloom_app.pages.chat import ChatPage
from ragloom_app.ui.chat_handlers import ChatHandlers
from tests.helpers.api_server import replay_app


def test_inputs_come_back_when_the_database_fails_the_answer_and_the_list_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = ChatHandlers(ChatPage(replay_app(tmp_path)))

    def locked(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("SELECT", {}, Exception("database is locked"))

    cid = chat.store.create()
    monkeypatch.setattr(chat.page, "ask", locked)
    monkeypatch.setattr(chat.store, "list", locked)  # as the answer's failure was
    with pytest.warns(UserWarning, match="Answering failed"):
        *_, last = chat.respond("Where is the reactor?", "fullqa", cid, None, None)
    chat_history, question, _, _, selector, send = last
    assert question["interactive"] is True and send["interactive"] is True
    assert "Sorry" in chat_history[-1]["content"]
    assert selector == {"__type__": "update"}  # left as it was (gr.skip())
