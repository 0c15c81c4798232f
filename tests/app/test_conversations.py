"""Conversations persist in the database, across app restarts."""

from pathlib import Path

from ragloom.events import Citation
from ragloom_app.conversations import ConversationStore
from ragloom_app.db import create_db_engine


def test_messages_survive_a_new_engine(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'app.db'}"
    store = ConversationStore(create_db_engine(url))
    conversation = store.create()
    store.add_message(conversation, "user", "What is the reactor temperature?")
    citation = Citation(1, "reactor.md", None, "451 kelvin", "c1")
    store.add_message(
        conversation, "assistant", "451 kelvin [1].", mode="fullqa", citations=[citation]
    )

    again = ConversationStore(create_db_engine(url))
    (listed,) = again.list()
    assert listed["title"] == "What is the reactor temperature?"
    messages = again.messages(conversation)
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[1].citations[0].text == "451 kelvin"
    assert messages[1].mode == "fullqa"
