"""The app database's migrations: a database of the previous release is upgraded with its
data; the revisions, run from nothing, make exactly the schema the models describe. On
SQLite and on a real PostgreSQL server (``database_url``)."""

from __future__ import annotations

import logging
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel

from ragloom_app.accounts.store import AccountStore
from ragloom_app.conversations import ConversationStore
from ragloom_app.db import create_db_engine
from ragloom_app.db.migrate import _config, current_revision, head_revision, migrate
from ragloom_app.db.models import UserRecord
from ragloom_app.index.manager import IndexAccess

PREVIOUS_RELEASE = Path(__file__).parent / "data" / "ragloom-before-accounts.sql"
PASSWORD = "correct horse battery"


def _differences(engine: Engine) -> list[object]:
    """What alembic finds between the database and the models (nothing, when current)."""
    with engine.connect() as connection:
        return list(compare_metadata(MigrationContext.configure(connection), SQLModel.metadata))


def _previous_release(folder: Path) -> Path:
    db = folder / "ragloom.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(PREVIOUS_RELEASE.read_text(encoding="utf-8"))
    return db


def test_a_database_of_the_previous_release_is_upgraded_with_its_data(tmp_path: Path) -> None:
    db = _previous_release(tmp_path)
    engine = create_db_engine(f"sqlite:///{db}")
    assert current_revision(engine) == head_revision()
    assert _differences(engine) == []
    # Its conversation and index are the local user's, the index shared, as before.
    store = ConversationStore(engine)
    (conversation,) = store.list()
    assert conversation["title"] == "How hot is the reactor?"
    assert [m.content for m in store.messages(conversation["id"])] == [
        "How hot is the reactor?",
        "451 kelvin [1].",
    ]
    with sqlite3.connect(db) as conn:
        owner, shared, store_name = conn.execute(
            "SELECT owner, shared, store_name FROM indices"
        ).fetchone()
        (status,) = conn.execute("SELECT status FROM sources").fetchone()
        (chunks,) = conn.execute("SELECT count(*) FROM chunks").fetchone()
    assert IndexAccess(owner, bool(shared)) == IndexAccess()
    assert store_name is None  # its stores hold the id's name, which it keeps
    assert (status, chunks) == ("INDEXED", 1)
    # Opened again, there is nothing left to do.
    assert migrate(engine) == "current"


def test_the_revisions_make_the_schema_the_models_describe(database_url: str) -> None:
    engine = create_engine(database_url)
    with engine.begin() as connection:
        command.upgrade(_config(connection), "head")
    assert _differences(engine) == []


def test_a_new_database_is_made_from_the_models_and_stamped(database_url: str) -> None:
    made = create_db_engine(database_url)
    assert current_revision(made) == head_revision() and _differences(made) == []
    assert migrate(made) == "current"


def test_a_database_at_the_first_revision_is_upgraded_with_its_rows(database_url: str) -> None:
    engine = create_engine(database_url)
    with engine.begin() as connection:
        command.upgrade(_config(connection), "0001")
        connection.execute(
            text(
                "INSERT INTO conversations (id, title, created_at, updated_at) "
                "VALUES ('c1', 'Before accounts', :now, :now)"
            ),
            {"now": datetime.now(UTC)},
        )
    assert _differences(engine)  # the accounts' tables and columns are missing
    assert migrate(engine) == "upgraded"
    assert current_revision(engine) == head_revision() and _differences(engine) == []
    (kept,) = ConversationStore(engine).list()  # the local user's
    assert (kept["id"], kept["title"]) == ("c1", "Before accounts")


def test_processes_starting_together_migrate_one_after_the_other(database_url: str) -> None:
    outcomes: list[str] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            outcomes.append(migrate(create_engine(database_url)))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert sorted(outcomes) == ["created", "current", "current"]


def test_the_database_refuses_a_name_that_differs_in_case_alone(database_url: str) -> None:
    """The store looks before it writes, so two such names added at once both got in: the
    database's own index refuses the second, whichever way it comes."""
    engine = create_db_engine(database_url)
    AccountStore(engine).add_user("alice", PASSWORD)
    with Session(engine) as session:  # past the store's look, as a racing add is
        session.add(UserRecord(id="racing", name="ALICE", password_hash="x"))
        with pytest.raises(IntegrityError):
            session.commit()


def test_an_upgrade_keeps_names_that_differ_in_case_alone_and_names_them(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    engine = create_engine(database_url)
    with engine.begin() as connection:
        command.upgrade(_config(connection), "0006")
        for user_id, name in (("u1", "alice"), ("u2", "Alice")):
            connection.execute(
                text(
                    "INSERT INTO users (id, name, password_hash, is_admin, disabled, created_at)"
                    " VALUES (:id, :name, 'x', false, false, :now)"
                ),
                {"id": user_id, "name": name, "now": datetime.now(UTC)},
            )
    with caplog.at_level(logging.WARNING):
        assert migrate(engine) == "upgraded"
    assert current_revision(engine) == head_revision()
    assert "users whose names differ in case alone (alice): delete all but one" in caplog.text
    with engine.connect() as connection:
        names = connection.execute(text("SELECT name FROM users ORDER BY id")).scalars().all()
    assert names == ["alice", "Alice"]
    with engine.begin() as connection:  # the revision goes back down without its index
        command.downgrade(_config(connection), "0006")
    assert migrate(engine) == "upgraded"
    # Once the administrator deleted one, the next start makes the index.
    AccountStore(engine).delete_user("Alice")
    assert migrate(engine) == "current"
    with Session(engine) as session:
        session.add(UserRecord(id="racing", name="ALICE", password_hash="x"))
        with pytest.raises(IntegrityError):
            session.commit()
