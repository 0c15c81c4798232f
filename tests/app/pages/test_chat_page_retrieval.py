"""ChatPage: the file selection, the request's settings and the LLM reaching the indices.

The answers come from the scripted LLM (these tests are about what is searched, not how
well the model writes); retrieval runs on the real embedding model, with the embedded
stores (Chroma, BM25), then with the servers (a Chroma server, PostgreSQL's full text).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom.events import CitationsFound
from ragloom.retrieval import (
    FullTextRetriever,
    HybridRetriever,
    LLMReranker,
    RerankingRetriever,
    VectorRetriever,
)
from ragloom_app.app import BaseApp
from ragloom_app.index.settings import IndexSettingsError
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.reasoning.base import ReasoningState
from ragloom_app.reasoning.fullqa import FullQAReasoning
from ragloom_app.settings import AppSettings
from tests.helpers.scripted_llm import ScriptedLLM
from tests.helpers.stores import STORE_KINDS, stores_for

REACTOR = "# Reactor\n\nThe Zorblax reactor serves heat at 451 kelvin from noon.\n"
CANTEEN = "# Canteen\n\nThe canteen serves lunch from noon to two on weekdays.\n"
QUESTION = "When does the canteen serve lunch from noon?"
ANSWER = "The canteen serves lunch from noon to two [1]."


@pytest.fixture(scope="module", params=STORE_KINDS)
def app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BaseApp]:
    """An app on the embedded stores, then on the servers, with a file in each of two
    indices."""
    folder = tmp_path_factory.mktemp("docs")
    (folder / "reactor.md").write_text(REACTOR, encoding="utf-8")
    (folder / "canteen.md").write_text(CANTEEN, encoding="utf-8")
    with stores_for(request) as stores:
        yield _indexed_app(stores.app_settings(tmp_path_factory.mktemp("data")), folder)


def _indexed_app(settings: AppSettings, folder: Path) -> BaseApp:
    # Each ask builds its pipeline with app.llm(): a scripted model with one reply a test.
    settings.llms = {"scripted": {"class": "tests.helpers.scripted_llm.ScriptedLLM"}}
    settings.default_llm = "scripted"
    app = BaseApp(settings).start()
    second = app.indices.create("Second", "ragloom_app.index.file.FileIndex")
    first = app.indices.get("My files")
    assert first.get_indexing_pipeline({}).run([folder / "reactor.md"])[0].status == "indexed"
    assert second.get_indexing_pipeline({}).run([folder / "canteen.md"])[0].status == "indexed"
    return app


def _llm(app: BaseApp, *replies: str) -> ScriptedLLM:
    llm = app.llm()
    assert isinstance(llm, ScriptedLLM)
    llm.replies.extend(replies)
    llm.prompts.clear()
    return llm


def _canteen_id(app: BaseApp) -> str:
    return app.indices.get("Second").list_sources()[0]["id"]


def test_ask_searches_only_the_selected_files(app: BaseApp) -> None:
    llm = _llm(app, ANSWER)
    selected = {"My files": [], "Second": [_canteen_id(app)]}
    events = list(ChatPage(app).ask(QUESTION, selected_sources=selected))
    prompt = llm.prompts[0][1].content
    assert "canteen.md" in prompt and "reactor.md" not in prompt
    (citations,) = [e.citations for e in events if isinstance(e, CitationsFound)]
    (citation,) = citations
    assert citation.source == "canteen.md"
    assert set(citation.found_by) == {"vector", "fulltext"}
    assert citation.highlight is not None
    assert citation.text[slice(*citation.highlight)] == "The canteen serves lunch from noon to two"
    record = events[-1].record.to_dict() if isinstance(events[-1], AnswerFinished) else {}
    assert record["citations"][0]["highlight"] == citation.highlight
    retrieve = next(s for s in record["steps"] if s["step"] == "retrieve" and "output" in s)
    assert [r["source"] for r in retrieve["output"]] == ["canteen.md"]
    assert set(retrieve["output"][0]["found_by"]) == {"vector", "fulltext"}


def test_without_a_selection_every_index_is_searched(app: BaseApp) -> None:
    llm = _llm(app, ANSWER)
    list(ChatPage(app).ask(QUESTION, settings={"top_k": 2}))
    prompt = llm.prompts[0][1].content
    assert "canteen.md" in prompt and "reactor.md" in prompt


def test_indices_mapped_to_no_file_get_no_retriever(app: BaseApp) -> None:
    page = ChatPage(app)
    state = ReasoningState(llm=ScriptedLLM())
    pipeline = page.create_pipeline(
        None, {}, state, selected_sources={"My files": [], "Second": [_canteen_id(app)]}
    )
    assert isinstance(pipeline, FullQAReasoning) and len(pipeline.retrievers) == 1
    everything = page.create_pipeline(None, {}, state, selected_sources={"Second": []})
    assert len(everything.retrievers) == 1  # "My files" was left out: searched whole


def test_the_requests_llm_reaches_the_reranker(app: BaseApp) -> None:
    judge = ScriptedLLM(replies=["no", "yes"])
    page = ChatPage(app)
    pipeline = page.create_pipeline(
        None, {"rerank": True, "top_k": 1}, ReasoningState(llm=judge), indices=["Second"]
    )
    (retriever,) = pipeline.retrievers
    assert isinstance(retriever, RerankingRetriever)
    (reranker,) = retriever.rerankers
    assert isinstance(reranker, LLMReranker) and reranker.llm is judge
    assert retriever(QUESTION)  # the only candidate was judged "no": kept as the fallback
    assert len(judge.prompts) == 1


def test_each_index_searches_as_its_own_settings_say(app: BaseApp) -> None:
    page = ChatPage(app)
    state = ReasoningState(llm=ScriptedLLM())
    pipeline = page.create_pipeline(
        None, {}, state, index_settings={"Second": {"retrieval_mode": "fulltext"}}
    )
    assert isinstance(pipeline, FullQAReasoning)
    assert [type(r) for r in pipeline.retrievers] == [HybridRetriever, FullTextRetriever]
    # The agent modes get them too: docsearch searches through the same retrievers.
    react = page.create_pipeline(
        "react", {}, state, index_settings={"My files": {"retrieval_mode": "vector"}}
    )
    docsearch = react.agent.tools["docsearch"]
    assert [type(r) for r in docsearch.retrievers] == [VectorRetriever, HybridRetriever]


def test_an_answer_uses_the_index_settings_of_the_request(app: BaseApp) -> None:
    _llm(app, ANSWER)
    events = list(
        ChatPage(app).ask(
            QUESTION, indices=["Second"], index_settings={"Second": {"retrieval_mode": "fulltext"}}
        )
    )
    (citations,) = [e.citations for e in events if isinstance(e, CitationsFound)]
    assert [set(c.found_by) for c in citations] == [{"fulltext"}]


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"Second": {"retrieval_mode": "telepathy"}}, "index 'Second': retrieval_mode must be one"),
        ({"Second": {"mmr_lambda": 2}}, "index 'Second': mmr_lambda must be between 0.0 and 1.0"),
        ({"Second": {"rerankk": True}}, "index 'Second': no such setting: rerankk"),
        ({"Elsewhere": {"mmr": True}}, "settings for no such index: 'Elsewhere'"),
    ],
)
def test_index_settings_it_does_not_allow_are_refused_before_anything_is_saved(
    app: BaseApp, given: dict, words: str
) -> None:
    page = ChatPage(app)
    conversation = page.conversations.create()
    with pytest.raises(IndexSettingsError, match=re.escape(words)):
        list(page.ask(QUESTION, conversation_id=conversation, index_settings=given))
    assert page.conversations.messages(conversation) == []


def test_a_mode_setting_that_moved_to_the_indices_still_reaches_them(
    app: BaseApp, caplog: pytest.LogCaptureFixture
) -> None:
    page = ChatPage(app)
    state = ReasoningState(llm=ScriptedLLM())
    with caplog.at_level(logging.WARNING, logger="ragloom_app.index.settings"):
        pipeline = page.create_pipeline(
            None,
            {"retrieval_mode": "vector"},
            state,
            index_settings={"Second": {"retrieval_mode": "fulltext"}},
        )
    # The index's own setting wins over the old mode-level one.
    assert [type(r) for r in pipeline.retrievers] == [VectorRetriever, FullTextRetriever]
    assert "the mode settings retrieval_mode belong to the indices now" in caplog.text
    assert "--index-setting" in caplog.text
