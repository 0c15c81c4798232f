"""Two app processes' worth of state on the same servers: one PostgreSQL database (rows and
full text) and one ``chroma run`` (vectors), each app with its own data folder. What one
indexes the other finds at once, a conversation started on one goes on on the other, and
nothing lives in one app's folder."""

from __future__ import annotations

import threading
import time
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
from tests.helpers.chroma_server import ChromaServer
from tests.helpers.postgres import PostgresServer, database

pytestmark = pytest.mark.postgres

FILE_INDEX = "ragloom_app.index.file.FileIndex"


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


def _marked(app: BaseApp, source_id: str, status: SourceStatus = SourceStatus.INDEXING) -> None:
    """The row as while its process indexes the file again (or died doing so)."""
    with Session(app.engine) as session:
        source = session.get(Source, source_id)
        assert source is not None
        source.status = status
        session.add(source)
        session.commit()


def test_a_file_being_indexed_through_one_is_left_alone_by_the_other(
    two_apps: tuple[BaseApp, BaseApp], tmp_path: Path
) -> None:
    # Work locks are files in each app's own folder; the second sees the first's through
    # the database they share. Before, a file the first was indexing looked to the
    # second like one a stopped process left: a start's recovery took it over, failed
    # it and took its chunks out of the shared stores, and an upload of the same content
    # indexed it a second time, whose flip then removed the first's source mid-way.
    first, second = two_apps
    outcome = _indexed_reactor(first, tmp_path)
    source_id = outcome.source_id or ""
    chunks = _index(first).vector_store.ids()
    indexing = _index(first).work_locks.lock(source_id)
    assert indexing.acquire(blocking=False)
    _marked(first, source_id)

    assert second.recover_indices() == []
    assert _index(second).vector_store.ids() == chunks
    (listed,) = _index(second).list_sources()
    assert (listed["status"], listed["reason"]) == ("indexing", None)
    report = _index(second).check(repair=True)
    assert report.problems == []
    assert report.notes == ["1 files are being worked on now: 'reactor.md'"]
    again = _index(second).reindex_source(source_id)
    assert again is not None and again.reason == "it is being worked on: try later"

    # The same content uploaded through the second waits for the first's copy to end.
    pipeline = _index(second).get_indexing_pipeline({})
    pipeline.busy_wait_seconds = 30

    def finish_in_first() -> None:
        time.sleep(1.0)
        _marked(first, source_id, SourceStatus.INDEXED)
        indexing.release()

    finisher = threading.Thread(target=finish_in_first)
    finisher.start()
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "reactor-notes.md").write_bytes((tmp_path / "reactor.md").read_bytes())
    (uploaded,) = pipeline.run([copy / "reactor-notes.md"])
    finisher.join()
    assert (uploaded.status, uploaded.reason) == (
        "skipped",
        "already indexed as 'reactor.md' (same content)",
    )
    assert [s["id"] for s in _index(second).list_sources()] == [source_id]
    assert _index(second).vector_store.ids() == chunks


def test_a_file_left_unfinished_in_the_other_folder_is_left_to_that_folders_process(
    two_apps: tuple[BaseApp, BaseApp], tmp_path: Path
) -> None:
    # Its process stopped, and only its data folder has the stored copy to index it from.
    first, second = two_apps
    outcome = _indexed_reactor(first, tmp_path)
    chunks = _index(first).vector_store.ids()
    _marked(first, outcome.source_id or "")

    assert second.recover_indices() == []
    assert _index(second).vector_store.ids() == chunks
    (listed,) = _index(second).list_sources()
    assert listed["status"] == "queued"
    assert listed["reason"].startswith("interrupted in another data folder; indexed again by")
    report = _index(second).check()
    assert report.problems == []
    assert [n for n in report.notes if "unfinished in another data folder" in n] == [
        "1 files were left unfinished in another data folder by a process that stopped; a "
        "process of that folder recovers them (`ragloom serve` as it starts, or `ragloom "
        "index check --repair`): 'reactor.md'"
    ]

    # Its own process finishes it.
    (recovered,) = first.recover_indices()
    assert (recovered.name, recovered.status) == ("reactor.md", "indexed")
    (retriever,) = _index(second).get_retriever_pipelines({"retrieval_mode": "hybrid"})
    (found, *_) = retriever.run("How hot is the Zorblax reactor?")
    assert "451 kelvin" in found.chunk.text
