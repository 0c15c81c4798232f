"""An index whose vectors live on a Chroma server (``CHROMA_SERVER``): the same index code
as the embedded store, against a real ``chroma run`` on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ragloom.stores import StoreUnavailableError
from ragloom.stores.chroma import chroma_http_client
from ragloom_app.app import BaseApp
from ragloom_app.index.file import FileIndex
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.settings import AppSettings, SettingsError, chroma_address
from tests.helpers.api_server import replay_app, served
from tests.helpers.chroma_server import ChromaServer, chroma_server

FILE_INDEX = "ragloom_app.index.file.FileIndex"


@pytest.fixture(scope="module")
def server() -> Iterator[ChromaServer]:
    with chroma_server() as running:
        yield running


def _indexed(app: BaseApp, folder: Path, name: str = "reactor.md") -> FileIndex:
    document = folder / name
    document.write_text("The Zorblax reactor runs at 451 kelvin.", encoding="utf-8")
    index = app.indices.get("My files")
    assert isinstance(index, FileIndex)
    (outcome,) = index.get_indexing_pipeline({}).run([document])
    assert outcome.status == "indexed", outcome
    return index


def test_vectors_go_to_the_server_and_nothing_to_the_data_folder(
    server: ChromaServer, tmp_path: Path
) -> None:
    app = replay_app(tmp_path, chroma_server=server.url)
    index = _indexed(app, tmp_path)
    on_server = chroma_http_client("127.0.0.1", server.port)  # its telemetry off
    assert index.collection_name in [c.name for c in on_server.list_collections()]
    assert on_server.get_collection(index.collection_name).count() == 1
    assert not (tmp_path / "data" / "chroma").exists()
    (retriever,) = index.get_retriever_pipelines({"retrieval_mode": "vector"})
    (found,) = retriever.run("How hot does the Zorblax reactor run?")[:1]
    assert "451 kelvin" in found.chunk.text
    assert index.check().clean
    collection = index.collection_name
    app.indices.delete("My files")
    assert collection not in [c.name for c in on_server.list_collections()]


def test_an_outage_fails_cleanly_and_the_app_recovers_without_a_restart(
    server: ChromaServer, tmp_path: Path
) -> None:
    app = replay_app(tmp_path, chroma_server=server.url)
    index = _indexed(app, tmp_path)
    (retriever,) = index.get_retriever_pipelines({"retrieval_mode": "vector"})
    server.stop()
    try:
        with pytest.raises(StoreUnavailableError) as failed:
            retriever.run("How hot does the Zorblax reactor run?")
        # The passage's words, not its number: a free port may hold "451".
        assert "kelvin" not in str(failed.value)
        second = tmp_path / "second.md"
        second.write_text("The cooling loop is flushed every 90 days.", encoding="utf-8")
        (outcome,) = index.get_indexing_pipeline({}).run([second])
        # Said, in words that name the server (its address hidden), not half-stored.
        assert outcome.status == "failed"
        assert "the Chroma server could not be reached" in str(outcome.reason)
        assert server.url.split("//")[1] not in str(outcome.reason)
        # A question meanwhile is answered from the full text alone (hybrid search, the
        # default, leaves the vectors out), its citation from the file that says it.
        question = "How hot does the Zorblax reactor run?"
        *_, finished = ChatPage(app).ask(question)
        assert isinstance(finished, AnswerFinished)
        assert finished.record.answer == "The Zorblax reactor runs at 451 kelvin [1]."
        (cited,) = finished.record.citations
        assert "451 kelvin" in cited.text and set(cited.found_by) == {"fulltext"}
        # A search of the vectors alone ends in words, not a crash.
        vector_only = {"My files": {"retrieval_mode": "vector"}}
        *_, finished = ChatPage(app).ask(question, index_settings=vector_only)
        assert isinstance(finished, AnswerFinished)
        answer = finished.record.answer
        assert "searching the documents failed: the Chroma server could not be reached" in answer
    finally:
        server.start()
    # The same objects work again: no restart of the app.
    (found,) = retriever.run("How hot does the Zorblax reactor run?")[:1]
    assert "451 kelvin" in found.chunk.text
    (again,) = index.get_indexing_pipeline({}).run([tmp_path / "second.md"])
    assert again.status == "indexed"
    assert index.check().clean


def test_a_hybrid_search_with_mmr_answers_from_the_full_text_while_the_server_is_away(
    server: ChromaServer, tmp_path: Path
) -> None:
    app = replay_app(tmp_path, chroma_server=server.url)
    index = _indexed(app, tmp_path)
    more = tmp_path / "cooling.md"
    more.write_text("The Zorblax reactor is cooled by a loop of water.", encoding="utf-8")
    (outcome,) = index.get_indexing_pipeline({}).run([more])
    assert outcome.status == "indexed", outcome
    question = "How hot does the Zorblax reactor run?"
    mmr = {"My files": {"mmr": True}}
    (retriever,) = index.get_retriever_pipelines({"mmr": True})
    server.stop()
    try:
        # Two passages found by full text: MMR has vectors to ask for, and embeds them
        # again instead of failing the search.
        assert len(retriever.run(question)) == 2
        *_, finished = ChatPage(app).ask(question, index_settings=mmr)
    finally:
        server.start()
    assert isinstance(finished, AnswerFinished)
    # The replayed answer, not "searching the documents failed"; the evidence is both
    # passages, found by full text (the citations' order is the search's).
    assert finished.record.answer.startswith("The Zorblax reactor runs at 451 kelvin [1]")
    cited = finished.record.citations
    assert any("451 kelvin" in c.text for c in cited)
    assert all(set(c.found_by) == {"fulltext"} for c in cited)


def test_the_api_answers_503_while_the_server_is_away_and_the_same_request_works_after(
    server: ChromaServer, tmp_path: Path
) -> None:
    app = replay_app(tmp_path, chroma_server=server.url)
    index = _indexed(app, tmp_path)
    (entry,) = index.list_sources()
    with served(app) as url:
        file_url = f"{url.rstrip('/')}/api/v1/indices/My files/files/{entry['id']}"
        server.stop()
        try:
            refused = httpx.delete(file_url)
        finally:
            server.start()
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "5"
        assert refused.json()["error"] == {
            "code": "unavailable",
            "message": "An index's store cannot be reached right now: the Chroma server "
            "could not be reached (the connection was refused or failed).",
            "type": "unavailable_error",
            "param": None,
        }
        # The removal was left half-way, and the file says so; asked again, it completes.
        assert [s["status"] for s in index.list_sources()] == ["removing"]
        assert httpx.delete(file_url).status_code == 204
    assert index.list_sources() == []
    assert index.check().clean


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "ftp://h:1", "http://host", "http://:80"])
def test_a_server_address_that_cannot_work_is_refused_at_start(url: str, tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="CHROMA_SERVER: must be http://HOST:PORT"):
        AppSettings(data_dir=tmp_path, chroma_server=url)
    assert chroma_address("https://chroma.internal:8443") == ("chroma.internal", 8443, True)


def test_two_deployments_on_one_server_keep_their_indices_apart(
    server: ChromaServer, tmp_path: Path
) -> None:
    # Each database numbers its first index 1: the collections are named otherwise.
    apps = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        apps.append(replay_app(tmp_path / name, chroma_server=server.url))
    ours = _indexed(apps[0], tmp_path / "first")
    (tmp_path / "second" / "loop.md").write_text("The cooling loop is flushed every 90 days.")
    theirs = apps[1].indices.get("My files")
    (outcome,) = theirs.get_indexing_pipeline({}).run([tmp_path / "second" / "loop.md"])
    assert outcome.status == "indexed"
    assert ours.id == theirs.id and ours.collection_name != theirs.collection_name

    def found(index: object, question: str) -> list[str]:
        assert isinstance(index, FileIndex)
        (retriever,) = index.get_retriever_pipelines({"retrieval_mode": "vector"})
        return [hit.chunk.text for hit in retriever.run(question)]

    assert found(ours, "How hot does the reactor run?") == [
        "The Zorblax reactor runs at 451 kelvin."
    ]
    assert found(theirs, "How hot does the reactor run?") == [
        "The cooling loop is flushed every 90 days."
    ]
    apps[0].indices.delete("My files")  # the other deployment's collection stays
    assert found(theirs, "cooling") == ["The cooling loop is flushed every 90 days."]
    assert theirs.check().clean
