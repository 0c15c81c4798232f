"""ChatPage: the file selection, the request's settings and the LLM reaching the indices.

The answers come from the scripted LLM (these tests are about what is searched, not how
well the model writes); retrieval runs on the real embedding model, Chroma and BM25.
"""

from __future__ import annotations

import pytest

from ragloom.events import CitationsFound
from ragloom.retrieval import LLMReranker, RerankingRetriever
from ragloom_app.app import BaseApp
from ragloom_app.pages.chat import AnswerFinished, ChatPage
from ragloom_app.reasoning.base import ReasoningState
from ragloom_app.reasoning.fullqa import FullQAReasoning
from ragloom_app.settings import AppSettings
from tests.helpers.scripted_llm import ScriptedLLM

REACTOR = "# Reactor\n\nThe Zorblax reactor serves heat at 451 kelvin from noon.\n"
CANTEEN = "# Canteen\n\nThe canteen serves lunch from noon to two on weekdays.\n"
QUESTION = "When does the canteen serve lunch from noon?"
ANSWER = "The canteen serves lunch from noon to two [1]."


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> BaseApp:
    folder = tmp_path_factory.mktemp("docs")
    (folder / "reactor.md").write_text(REACTOR, encoding="utf-8")
    (folder / "canteen.md").write_text(CANTEEN, encoding="utf-8")
    settings = AppSettings(data_dir=tmp_path_factory.mktemp("data"))
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
