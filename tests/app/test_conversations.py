"""Conversations persist in the database, across app restarts, and are answered one
question at a time."""

import logging
import os
import socket
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError
from sqlmodel import Session

from ragloom.events import Citation
from ragloom.grounding_report import GroundingReport
from ragloom.qa.grounding import check_grounding
from ragloom_app.conversation_holds import holder, live_hold
from ragloom_app.conversations import (
    ConversationBusyError,
    ConversationStore,
    StoredMessage,
    UnknownConversationError,
)
from ragloom_app.db import create_db_engine
from ragloom_app.db.models import Conversation, MessageRecord


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


def test_rows_an_earlier_version_stored_read_back_typed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Citations as the previous version wrote them (JSON dicts, before found_by and
    # highlight), one with a highlight that JSON made a list, and two that are no citation.
    engine = create_db_engine(f"sqlite:///{tmp_path / 'app.db'}")
    store = ConversationStore(engine)
    conversation = store.create()
    old = {"number": 1, "source": "r.md", "page": None, "text": "451 K", "chunk_id": "c1"}
    rows = [old, {**old, "number": 2, "highlight": [0, 3]}, {"number": 3}, "nonsense"]
    with Session(engine) as session:
        session.add(
            MessageRecord(
                conversation_id=conversation, role="assistant", content="451 K [1] [2].",
                mode="fullqa", citations=rows,
            )
        )  # fmt: skip
        session.commit()
    with caplog.at_level(logging.WARNING, logger="ragloom_app.conversations"):
        (message,) = ConversationStore(engine).messages(conversation)
    first = Citation(1, "r.md", None, "451 K", "c1")
    second = Citation(2, "r.md", None, "451 K", "c1", highlight=(0, 3))
    assert message == StoredMessage("assistant", "451 K [1] [2].", "fullqa", [first, second])
    # The two rows that are no citation are left out of the message, each said in the log.
    assert len([r for r in caplog.records if "a citation left out" in r.getMessage()]) == 2


def _report() -> GroundingReport:
    return check_grounding(
        "It runs at 451 kelvin [1]. It was built in 1962 [1].", {1: "It runs at 451 kelvin."}
    )


def test_an_answers_grounding_report_is_kept_with_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'app.db'}"
    store = ConversationStore(create_db_engine(url))
    conversation = store.create()
    store.add_message(conversation, "user", "How hot is it?")
    store.add_message(conversation, "assistant", "It runs ... [1].", grounding=_report())
    user, answer = ConversationStore(create_db_engine(url)).messages(conversation)
    assert user.grounding is None
    assert answer.grounding == _report()
    assert answer.grounding is not None and answer.grounding.status == "partly"


def test_a_stored_report_that_cannot_be_read_leaves_the_answer_unmarked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'app.db'}")
    conversation = ConversationStore(engine).create()
    broken = {**_report().to_dict(), "status": "certainly"}
    with Session(engine) as session:
        for grounding in (broken, {"status": "supported", "sentences": "all"}, None):
            session.add(
                MessageRecord(
                    conversation_id=conversation, role="assistant", content="451 K [1].",
                    citations=[], grounding=grounding,
                )
            )  # fmt: skip
        session.commit()
    with caplog.at_level(logging.WARNING, logger="ragloom_app.conversations"):
        messages = ConversationStore(engine).messages(conversation)
    assert [m.grounding for m in messages] == [None, None, None]
    assert [m.content for m in messages] == ["451 K [1]."] * 3
    assert len([r for r in caplog.records if "grounding report left out" in r.getMessage()]) == 2


def test_deleting_a_conversation_deletes_its_messages_first(tmp_path: Path) -> None:
    # The database enforces the messages' foreign key: the conversation's row can only go
    # once they have.
    store = ConversationStore(create_db_engine(f"sqlite:///{tmp_path / 'app.db'}"))
    kept, gone = store.create(owner="alice"), store.create(owner="alice")
    for conversation in (kept, gone):
        store.add_message(conversation, "user", "How hot is it?")
        store.add_message(conversation, "assistant", "451 kelvin.")
    assert not store.delete(gone, owner="bob")  # not his
    assert store.delete(gone, owner="alice")
    assert [c["id"] for c in store.list(owner="alice")] == [kept]
    assert store.messages(gone) == [] and len(store.messages(kept)) == 2


def test_a_nul_in_what_is_kept_is_kept_as_a_replacement_character(database_url: str) -> None:
    # PostgreSQL's text refuses U+0000 (the API refuses it before; the chat may not).
    store = ConversationStore(create_db_engine(database_url))
    conversation = store.create("notes\x00")
    store.add_message(conversation, "user", "How hot\x00 is it?")
    assert store.rename(conversation, "renamed\x00")
    assert [m.content for m in store.messages(conversation)] == ["How hot\ufffd is it?"]
    (listed,) = store.list()
    assert listed["title"] == "renamed\ufffd"


def test_an_answer_holds_its_conversation_on_every_database_and_a_dead_ones_hold_lapses(
    database_url: str,
) -> None:
    store = ConversationStore(create_db_engine(database_url))
    cid = store.create(owner="alice")
    with store.answering(cid, "alice", 60):
        with pytest.raises(ConversationBusyError), store.answering(cid, "alice", 60):
            pass  # pragma: no cover - never entered
        # Not bob's to hold.
        with pytest.raises(UnknownConversationError), store.answering(cid, "bob", 60):
            pass  # pragma: no cover - never entered
    with store.answering(cid, "alice", 60):  # given back when the answer ended
        pass
    # A process that died while answering never gives it back: its hold lapses.
    store.answering(cid, "alice", 0.2).__enter__()
    time.sleep(0.3)
    with store.answering(cid, "alice", 60):
        pass
    # An answer that outlived its hold gives back its own hold only, not the next one's.
    outlived = store.answering(cid, "alice", 0.2)
    outlived.__enter__()
    time.sleep(0.3)
    with store.answering(cid, "alice", 60):
        outlived.__exit__(None, None, None)
        with pytest.raises(ConversationBusyError), store.answering(cid, "alice", 60):
            pass  # pragma: no cover - never entered


def test_a_listing_searches_titles_as_text_and_comes_a_page_at_a_time(database_url: str) -> None:
    store = ConversationStore(create_db_engine(database_url))
    titles = ["Reactor notes", "100% uptime", "uptime_log", "Canteen", "REACTOR plans"]
    ids = {}
    for title in titles:
        ids[title] = store.create(title, owner="alice")
        store.rename(ids[title], title, owner="alice")  # changed in this order
    store.create("Reactor (bob's)", owner="bob")
    newest_first = [c["title"] for c in store.list("alice")]
    assert newest_first == titles[::-1]
    assert [c["title"] for c in store.list("alice", search="reactor")] == [
        "REACTOR plans",
        "Reactor notes",
    ]
    # "%" and "_" are characters, not SQL's wildcards.
    assert [c["title"] for c in store.list("alice", search="0%")] == ["100% uptime"]
    assert [c["title"] for c in store.list("alice", search="e_l")] == ["uptime_log"]
    assert [c["title"] for c in store.list("alice", limit=2, offset=1)] == newest_first[1:3]
    assert store.list("alice", offset=5) == [] and store.list("alice", limit=0) == []


def test_a_hold_of_a_process_that_died_on_this_machine_is_taken_over_at_once(
    database_url: str,
) -> None:
    """After a crash and a restart the conversation goes on at once; a hold of another
    machine's process still lapses at its time."""
    store = ConversationStore(create_db_engine(database_url))
    cid = store.create(owner="alice")
    dead_pid = subprocess.Popen(["true"])  # a process that has ended
    dead_pid.wait()
    host = socket.gethostname()

    def held_by(holder: str) -> None:
        with Session(store.engine) as session:
            row = session.get(Conversation, cid)
            assert row is not None
            row.answering_until = datetime.now(UTC) + timedelta(minutes=5)
            row.answering_by = holder
            session.add(row)
            session.commit()

    stale = [
        f"{host}:{dead_pid.pid}:s0123456789abcdef:h0123456789abcdef",
        # This pid's earlier life (a container's pid 1, restarted).
        f"{host}:{os.getpid()}:s0123456789abcdef:h0123456789abcdef",
        # This very process's, which no answer of it holds (its release failed).
        f"{holder()}:h0123456789abcdef",
        f"{host}:{dead_pid.pid}",  # an older release's holds
        f"{host}:{os.getpid()}",
    ]
    for dead in stale:
        held_by(dead)
        with store.answering(cid, "alice", 60):
            pass
    with live_hold() as answered_here:
        for alive in (f"another-machine.example:{os.getpid()}:s0:h0", answered_here):
            held_by(alive)
            with pytest.raises(ConversationBusyError), store.answering(cid, "alice", 60):
                pass  # pragma: no cover - never entered


def test_a_hold_whose_release_failed_is_taken_over_by_the_next_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database away as an answer ended: the conversation stays held by this process
    in its row, and the next question, in this process, must not wait minutes for it."""
    store = ConversationStore(create_db_engine(f"sqlite:///{tmp_path / 'app.db'}"))
    cid = store.create(owner="alice")

    def released_into_an_outage(*args: Any, **values: Any) -> None:
        raise OperationalError("UPDATE conversations", {}, Exception("server closed"))

    with pytest.raises(OperationalError), store.answering(cid, "alice", 60):
        monkeypatch.setattr(Session, "commit", released_into_an_outage)
    monkeypatch.undo()
    row = store._holding(cid, "alice")
    assert row.answering_until is not None and row.answering_by is not None  # still held
    with store.answering(cid, "alice", 60):
        pass


def test_two_answers_of_one_process_never_hold_a_conversation_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second of two questions asked together waits for no moment of the first: even
    between the first taking the hold and starting its answer, the hold is this live
    process's answer's, and the second is refused (it took the hold over as a dead
    process's)."""
    store = ConversationStore(create_db_engine(f"sqlite:///{tmp_path / 'app.db'}"))
    cid = store.create(owner="alice")
    hold = store._hold
    second: list[BaseException] = []

    def hold_then_another_asks(*args: Any) -> bool:
        taken = hold(*args)
        if taken and not second:
            with (
                pytest.raises(ConversationBusyError) as refused,
                store.answering(cid, "alice", 60),
            ):
                pass  # pragma: no cover - never entered
            second.append(refused.value)
        return taken

    monkeypatch.setattr(store, "_hold", hold_then_another_asks)
    with store.answering(cid, "alice", 60):
        pass
    assert len(second) == 1


def test_a_hold_given_back_between_the_two_looks_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ConversationStore(create_db_engine(f"sqlite:///{tmp_path / 'app.db'}"))
    cid = store.create(owner="alice")
    hold = store._hold
    tries: list[bool] = []

    def held_at_first_look(*args: object) -> bool:
        tries.append(True)
        return False if len(tries) == 1 else hold(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "_hold", held_at_first_look)
    with store.answering(cid, "alice", 60):
        pass
    assert len(tries) == 2
