"""The stores and the whole app on each database the app supports: SQLite (the laptop's)
and a real PostgreSQL server (``database_url``), with the same code."""

from __future__ import annotations

from pathlib import Path

from ragloom.events import Citation
from ragloom.stores import BM25Store, PostgresFullTextStore
from ragloom_app.accounts import AccountStore
from ragloom_app.accounts.preferences import ChatDefaults, ChatDefaultsStore
from ragloom_app.conversations import ConversationStore
from ragloom_app.db import create_db_engine
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from tests.helpers.api_server import ANSWER, replay_app

PASSWORD = "correct horse battery"


def test_accounts_sessions_and_keys(database_url: str) -> None:
    store = AccountStore(create_db_engine(database_url))
    alice = store.add_user("alice", PASSWORD, is_admin=True)
    user, token = store.login("alice", PASSWORD)
    assert user == alice and store.session_user(token) == alice
    info, key = store.create_key(alice, "ci")
    assert store.key_user(key) == alice and [k.id for k in store.keys(alice)] == [info.id]
    assert store.revoke_key(alice, info.id) and store.key_user(key) is None
    store.set_disabled("alice", True)
    assert store.session_user(token) is None and store.enabled_count() == 0
    store.delete_user("alice")
    assert store.users() == []


def test_conversations_with_citations_and_defaults(database_url: str) -> None:
    engine = create_db_engine(database_url)
    conversations = ConversationStore(engine)
    mine = conversations.create(owner="alice")
    conversations.add_message(mine, "user", "How hot is the reactor?")
    cited = Citation(1, "reactor.md", 2, "It runs at 451 kelvin.", "c1")
    conversations.add_message(mine, "assistant", "451 kelvin [1].", citations=[cited])
    assert conversations.list(owner="bob") == []
    (listed,) = conversations.list(owner="alice")
    assert listed["title"] == "How hot is the reactor?"
    assert conversations.messages(mine)[1].citations == [cited]
    assert conversations.delete(mine, owner="alice") and conversations.messages(mine) == []
    defaults = ChatDefaultsStore(engine)
    defaults.save("alice", ChatDefaults(mode="rewoo", modes={"rewoo": {"max_steps": 4}}))
    assert defaults.get("alice").modes == {"rewoo": {"max_steps": 4}}


def test_the_app_indexes_and_answers(database_url: str, tmp_path: Path) -> None:
    app = replay_app(tmp_path, database_url=database_url)
    document = tmp_path / "reactor.md"
    document.write_text("The Zorblax reactor runs at 451 kelvin.", encoding="utf-8")
    index = app.indices.get("My files")
    (outcome,) = index.get_indexing_pipeline({}).run([document])
    assert outcome.status == "indexed"
    page = ChatPage(app)
    conversation = page.conversations.create()
    *_, finished = page.ask("How hot is the reactor?", conversation_id=conversation)
    assert isinstance(finished, AnswerFinished) and finished.record.answer == ANSWER
    assert [c.source for c in finished.record.citations] == ["reactor.md"]
    assert len(page.conversations.messages(conversation)) == 2
    assert index.check().clean
    # The full text goes where every process sees it: into PostgreSQL when it is the
    # database, else into a BM25 file in the index's folder.
    on_postgres = database_url.startswith("postgresql")
    store = index.fulltext_store
    assert isinstance(store, PostgresFullTextStore if on_postgres else BM25Store)
    assert (
        Path(app.settings.data_dir) / "indices" / str(index.id) / "bm25"
    ).exists() != on_postgres
    app.indices.delete("My files")
    assert store.count() == 0
