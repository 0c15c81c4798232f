"""PostgreSQL stopped in the middle of a run and started again: what the app does meanwhile
and afterwards, on its own throwaway cluster (it is stopped; the shared one is not), which
keeps what it commits through a crash as a real server does."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ragloom_app.index.file import FileIndex
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from tests.helpers.api_server import ANSWER, replay_app, served
from tests.helpers.postgres import PostgresServer, fresh_database, postgres_bin, throwaway_postgres

pytestmark = pytest.mark.postgres


@pytest.fixture
def server() -> Iterator[PostgresServer]:
    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (scripts/ensure-postgres)")
    with throwaway_postgres(durable=True) as running:
        yield running


def test_requests_during_an_outage_fail_cleanly_and_the_app_recovers_without_a_restart(
    server: PostgresServer, tmp_path: Path
) -> None:
    stack = contextlib.ExitStack()
    with stack:
        _outage_and_recovery(server, tmp_path, stack)


def _outage_and_recovery(
    server: PostgresServer, tmp_path: Path, stack: contextlib.ExitStack
) -> None:
    app = replay_app(tmp_path, database_url=fresh_database(server))
    index = app.indices.get("My files")
    assert isinstance(index, FileIndex)
    reactor = tmp_path / "reactor.md"
    reactor.write_text("The Zorblax reactor runs at 451 kelvin.", encoding="utf-8")
    (outcome,) = index.get_indexing_pipeline({}).run([reactor])
    assert outcome.status == "indexed"
    page = ChatPage(app)
    conversation = page.conversations.create()

    api = f"{stack.enter_context(served(app)).rstrip('/')}/api/v1"
    server.stop()
    try:
        # Through the HTTP API: 503 with a reason and when to try again, not a 500.
        down = httpx.post(f"{api}/conversations/{conversation}/ask", json={"question": "Hot?"})
        assert down.status_code == 503 and down.headers["Retry-After"] == "5"
        assert down.json()["error"]["code"] == "unavailable"
        # A question fails in words, and nothing of it is stored (there is nowhere to).
        with pytest.raises(Exception) as failed:
            list(page.ask("How hot is the reactor?", conversation_id=conversation))
        # The passage's words, not its number: a free port may hold "451".
        assert "kelvin" not in str(failed.value)
        # A file fails with its reason, or is refused whole: never half-stored.
        second = tmp_path / "cooling.md"
        second.write_text("The cooling loop is flushed every 90 days.", encoding="utf-8")
        try:
            outcomes = index.get_indexing_pipeline({}).run([second])
        except Exception as refused:  # the database said no before the file was read
            assert "cooling" not in str(refused)
        else:
            assert [o.status for o in outcomes] == ["failed"] and outcomes[0].reason
    finally:
        server.start()

    # The same app objects work again: the pool finds its dead connections and replaces them.
    *_, finished = page.ask("How hot is the reactor?", conversation_id=conversation)
    assert isinstance(finished, AnswerFinished) and finished.record.answer == ANSWER
    assert [c.source for c in finished.record.citations] == ["reactor.md"]
    assert [m.role for m in page.conversations.messages(conversation)] == ["user", "assistant"]
    (again,) = index.get_indexing_pipeline({}).run([tmp_path / "cooling.md"])
    assert again.status == "indexed"
    assert index.check().clean
    up = httpx.post(f"{api}/conversations/{conversation}/ask", json={"question": "Hot?"})
    assert up.status_code == 200 and up.json()["answer"] == ANSWER


def test_a_server_killed_because_it_would_not_stop_keeps_what_it_committed(
    server: PostgresServer,
) -> None:
    """The test helper's last resort, when an immediate stop hangs on a busy machine: every
    process of the cluster killed, as in a power cut, and started again with its data."""
    import psycopg

    url = fresh_database(server).replace("postgresql+psycopg", "postgresql")
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("CREATE TABLE kept (fact text)")
        connection.execute("INSERT INTO kept VALUES ('451 kelvin')")
    server.kill()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=5)
    server.start()
    with psycopg.connect(url) as connection:
        assert connection.execute("SELECT fact FROM kept").fetchall() == [("451 kelvin",)]
