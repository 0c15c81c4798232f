"""Two app processes' worth of state on the same servers: one PostgreSQL database (rows and
full text) and one ``chroma run`` (vectors), each app with its own data folder. What one
indexes the other finds at once, a conversation started on one goes on on the other, and
nothing lives in one app's folder."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session

from ragloom_app.app import BaseApp
from ragloom_app.db.models import IndexRecord, Source, SourceStatus
from ragloom_app.index.base import FileOutcome
from ragloom_app.index.file import FileIndex
from ragloom_app.index.manager import new_store_name
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from tests.helpers.api_server import replay_app
from tests.helpers.chroma_server import ChromaServer, chroma_server
from tests.helpers.postgres import PostgresServer, database

pytestmark = pytest.mark.postgres

FILE_INDEX = "ragloom_app.index.file.FileIndex"


@pytest.fixture(scope="module")
def chroma() -> Iterator[ChromaServer]:
    with chroma_server() as running:
        yield running


@pytest.fixture
def server_database(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh database for the test's apps, dropped afterwards."""
    with database(postgres_server) as url:
        yield url


@pytest.fixture
def two_apps(server_database: str, chroma: ChromaServer, tmp_path: Path) -> tuple[BaseApp, BaseApp]:
    url = server_database
    first = replay_app(tmp_path / "one", database_url=url, chroma_server=chroma.url)
    second = replay_app(tmp_path / "two", database_url=url, chroma_server=chroma.url)
    return first, second


def _index(app: BaseApp) -> FileIndex:
    index = app.indices.get("My files")
    assert isinstance(index, FileIndex)
    return index


def _indexed_reactor(app: BaseApp, folder: Path) -> FileOutcome:
    document = folder / "reactor.md"
    document.write_text("The Zorblax reactor runs at 451 kelvin.", encoding="utf-8")
    (outcome,) = _index(app).get_indexing_pipeline({}).run([document])
    assert outcome.status == "indexed", outcome
    return outcome


def test_a_file_indexed_through_one_is_found_through_the_other_at_once(
    two_apps: tuple[BaseApp, BaseApp], tmp_path: Path
) -> None:
    first, second = two_apps
    outcome = _indexed_reactor(first, tmp_path)

    for mode in ("fulltext", "vector", "hybrid"):
        (retriever,) = _index(second).get_retriever_pipelines({"retrieval_mode": mode})
        (found, *_) = retriever.run("How hot is the Zorblax reactor?")
        assert "451 kelvin" in found.chunk.text, mode
    assert [s["name"] for s in _index(second).list_sources()] == ["reactor.md"]
    assert _index(second).check().clean

    _index(second).remove_source(outcome.source_id or "")
    (retriever,) = _index(first).get_retriever_pipelines({"retrieval_mode": "hybrid"})
    assert retriever.run("How hot is the Zorblax reactor?") == []
    for app in two_apps:  # nothing of the index was written to either app's folder
        assert not (app.settings.data_dir / "chroma").exists()
        assert not (app.settings.data_dir / "indices" / str(_index(app).id) / "bm25").exists()


def test_a_conversation_started_on_one_goes_on_on_the_other(
    two_apps: tuple[BaseApp, BaseApp], tmp_path: Path
) -> None:
    first, second = two_apps
    _indexed_reactor(first, tmp_path)

    on_first = ChatPage(first)
    conversation = on_first.conversations.create()
    *_, finished = on_first.ask("How hot is the reactor?", conversation_id=conversation)
    assert isinstance(finished, AnswerFinished)

    on_second = ChatPage(second)
    assert [c["id"] for c in on_second.conversations.list()] == [conversation]
    *_, again = on_second.ask("And how is it cooled?", conversation_id=conversation)
    assert isinstance(again, AnswerFinished)
    assert [c.source for c in again.record.citations] == ["reactor.md"]
    asked = [m.content for m in on_first.conversations.messages(conversation) if m.role == "user"]
    assert asked == ["How hot is the reactor?", "And how is it cooled?"]


def test_an_index_created_shared_or_deleted_through_one_is_seen_by_the_other(
    two_apps: tuple[BaseApp, BaseApp],
) -> None:
    first, second = two_apps
    made = first.indices.create("Team notes", FILE_INDEX, {}, owner="alice", shared=False)
    assert second.indices.get("Team notes").id == made.id
    assert [i.name for i in second.indices.readable_by("alice")] == ["My files", "Team notes"]
    assert [i.name for i in second.indices.readable_by("bob")] == ["My files"]
    first.indices.share(made)  # as an import does once every file is in
    assert [i.name for i in second.indices.readable_by("bob")] == ["My files", "Team notes"]
    first.indices.delete("Team notes")
    assert [i.name for i in second.indices.indices] == ["My files"]


def test_an_index_deleted_and_its_id_given_to_a_new_one_elsewhere_is_not_kept(
    two_apps: tuple[BaseApp, BaseApp],
) -> None:
    """The first process deleted an index and made a new one, which got its id (SQLite
    reuses the highest; here the rows are changed as that leaves them), between two
    listings of the second: the second starts the new index and forgets the old object,
    instead of keeping it under the new one's owner and sharing."""
    first, second = two_apps
    doomed = first.indices.create("Alice drafts", FILE_INDEX, {}, owner="alice", shared=False)
    assert second.indices.get("Alice drafts").id == doomed.id
    with Session(first.engine) as session:
        record = session.get(IndexRecord, doomed.id)
        assert record is not None
        record.name, record.owner, record.store_name = "Bob plans", "bob", new_store_name()
        session.add(record)
        session.commit()
    assert [i.name for i in second.indices.readable_by("bob")] == ["My files", "Bob plans"]
    assert [i.name for i in second.indices.readable_by("alice")] == ["My files"]


def test_processes_starting_together_make_the_default_index_once(
    server_database: str, chroma: ChromaServer, tmp_path: Path
) -> None:
    url = server_database
    apps: list[BaseApp] = []
    starts = [
        threading.Thread(
            target=lambda n=n: apps.append(
                replay_app(tmp_path / f"app{n}", database_url=url, chroma_server=chroma.url)
            )
        )
        for n in range(3)
    ]
    for thread in starts:
        thread.start()
    for thread in starts:
        thread.join()
    assert len(apps) == 3
    for app in apps:
        assert [i.name for i in app.indices.indices] == ["My files"]
        assert app.indices.unavailable == {}
    assert len({app.indices.get("My files").id for app in apps}) == 1


def test_a_file_unfinished_in_the_other_folder_is_left_to_that_folders_process(
    two_apps: tuple[BaseApp, BaseApp], tmp_path: Path
) -> None:
    # The second cannot see the first's work locks: a file the first is indexing looks
    # to it like one a stopped process left. Taking it over once failed it (its stored
    # copy is in the first's folder) and took its chunks out of the shared stores.
    first, second = two_apps
    outcome = _indexed_reactor(first, tmp_path)
    chunks = _index(first).vector_store.ids()
    with Session(first.engine) as session:
        source = session.get(Source, outcome.source_id)
        assert source is not None
        source.status = SourceStatus.INDEXING  # as while the first indexes it again
        session.add(source)
        session.commit()

    assert second.recover_indices() == []
    assert _index(second).vector_store.ids() == chunks
    (listed,) = _index(second).list_sources()
    assert listed["status"] == "indexing"
    report = _index(second).check()
    assert [p.kind for p in report.problems] == []
    assert any("unfinished in another data folder" in note for note in report.notes)

    # Its own process, finding no live holder, finishes it.
    (recovered,) = first.recover_indices()
    assert (recovered.name, recovered.status) == ("reactor.md", "indexed")
    (retriever,) = _index(second).get_retriever_pipelines({"retrieval_mode": "hybrid"})
    (found, *_) = retriever.run("How hot is the Zorblax reactor?")
    assert "451 kelvin" in found.chunk.text
