"""The request's settings turned into the file index's retrievers, over real stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.retrieval import (
    DefinitionPrior,
    FullTextRetriever,
    HybridRetriever,
    LLMReranker,
    MMRReranker,
    RerankingRetriever,
    VectorRetriever,
)
from ragloom.retrieval.restricted import RestrictedRetriever
from ragloom_app.app import BaseApp
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.index import RETRIEVAL_MODES
from ragloom_app.reasoning.fullqa import FullQAReasoning
from ragloom_app.settings import AppSettings
from tests.helpers.scripted_llm import ScriptedLLM

DOCS = {
    "reactor.md": "# Reactor\n\nThe Zorblax reactor runs at 451 kelvin.\n\n"
    "The cooling loop is flushed every 90 days by the night shift.\n",
    "canteen.md": "# Canteen\n\nThe canteen serves lunch from noon to two.\n\n"
    "Soup of the day is tomato on Mondays.\n",
}
QUESTION = "How often is the cooling loop flushed?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> FileIndex:
    folder = tmp_path_factory.mktemp("docs")
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    app = BaseApp(AppSettings(data_dir=tmp_path_factory.mktemp("data"))).start()
    (index,) = app.indices.indices
    assert isinstance(index, FileIndex)
    outcomes = index.get_indexing_pipeline({}).run(sorted(folder.iterdir()))
    assert {o.status for o in outcomes} == {"indexed"}
    return index


def _source_id(index: FileIndex, name: str) -> str:
    return next(s["id"] for s in index.list_sources() if s["name"] == name)


@pytest.mark.parametrize(
    ("mode", "kind", "names"),
    [
        ("hybrid", HybridRetriever, {"vector", "fulltext"}),
        ("vector", VectorRetriever, {"vector"}),
        ("fulltext", FullTextRetriever, {"fulltext"}),
    ],
)
def test_retrieval_mode_picks_the_retriever_and_found_by_says_which(
    index: FileIndex, mode: str, kind: type, names: set[str]
) -> None:
    (retriever,) = index.get_retriever_pipelines({"retrieval_mode": mode, "top_k": 2})
    assert type(retriever) is kind
    hits = retriever(QUESTION)
    assert 1 <= len(hits) <= 2
    assert "cooling loop" in hits[0].chunk.text
    assert all(h.found_by and set(h.found_by) <= names for h in hits)
    if mode == "hybrid":
        # The best chunk is found by both retrievers: merged once, with both scores.
        assert set(hits[0].found_by) == {"vector", "fulltext"}
        assert 0 < hits[0].found_by["vector"] <= 1 and hits[0].found_by["fulltext"] > 0
        assert len({h.chunk.id for h in hits}) == len(hits)


def test_the_modes_offered_to_users_are_the_ones_the_index_knows() -> None:
    # The search settings are the index's own (issue 15), no longer FullQA's.
    spec = FileIndex.get_user_settings()["retrieval_mode"]
    assert [value for _, value in spec["choices"]] == list(RETRIEVAL_MODES)
    assert FileIndex.resolve_settings({}) == {
        "retrieval_mode": "hybrid",
        "definition_prior": False,
        "mmr": False,
        "mmr_lambda": 0.5,
        "rerank": False,
    }
    assert FullQAReasoning.resolve_settings({}) == {
        "top_k": 3,
        "focus_sentences": 4,
        "precheck": True,
        "check_grounding": True,
    }


def test_hybrid_search_has_the_definition_prior_when_it_is_turned_on(index: FileIndex) -> None:
    (off,) = index.get_retriever_pipelines({})
    (on,) = index.get_retriever_pipelines({"definition_prior": True})
    assert isinstance(on, HybridRetriever) and isinstance(on.prior, DefinitionPrior)
    assert isinstance(off, HybridRetriever) and off.prior is None


def test_unknown_mode_is_refused(index: FileIndex) -> None:
    with pytest.raises(ValueError, match="retrieval_mode must be one of hybrid, vector, fulltext"):
        index.get_retriever_pipelines({"retrieval_mode": "telepathy"})


def test_mmr_wraps_the_retriever_with_the_lambda(index: FileIndex) -> None:
    (retriever,) = index.get_retriever_pipelines({"mmr": True, "mmr_lambda": 0.3, "top_k": 2})
    assert isinstance(retriever, RerankingRetriever)
    (mmr,) = retriever.rerankers
    assert isinstance(mmr, MMRReranker) and mmr.lambda_mult == 0.3
    assert mmr.vector_store is index.vector_store
    hits = retriever(QUESTION)
    assert "cooling loop" in hits[0].chunk.text and len(hits) == 2


def test_rerank_asks_the_given_llm_about_each_candidate(index: FileIndex) -> None:
    with pytest.raises(ValueError, match="rerank needs the LLM"):
        index.get_retriever_pipelines({"rerank": True})
    llm = ScriptedLLM(replies=["no", "yes", "yes"])
    settings = {"rerank": True, "mmr": True, "top_k": 1, "llm": llm}
    (retriever,) = index.get_retriever_pipelines(settings)
    assert [type(r) for r in retriever.rerankers] == [MMRReranker, LLMReranker]
    (hit,) = retriever(QUESTION)
    # The first candidate was judged irrelevant, so the second one is the answer.
    assert len(llm.prompts) == 2
    assert f"Passage: {' '.join(hit.chunk.text.split())}" in llm.prompts[1][1].content


def test_selection_filters_unless_it_holds_every_file(index: FileIndex) -> None:
    reactor, canteen = _source_id(index, "reactor.md"), _source_id(index, "canteen.md")
    (everything,) = index.get_retriever_pipelines({}, selected=[canteen, reactor])
    assert isinstance(everything, HybridRetriever)  # no $in filter for Chroma
    assert index.selection_filter(None) is None
    assert index.selection_filter([reactor]) == [reactor]
    (only_canteen,) = index.get_retriever_pipelines({"top_k": 5}, selected=[canteen])
    assert isinstance(only_canteen, RestrictedRetriever)
    hits = only_canteen(QUESTION)
    assert hits and {h.chunk.source_name for h in hits} == {"canteen.md"}
    (nothing,) = index.get_retriever_pipelines({}, selected=[])
    assert nothing(QUESTION) == []


def test_visibility_is_an_admin_setting_and_configs_are_checked() -> None:
    specs = FileIndex.get_admin_settings()
    assert specs["visibility"]["value"] == "private"
    assert specs["visibility"]["choices"] == ["private", "shared"]
    config = FileIndex.normalize_config(
        {"chunk_size": 120.0, "chunk_overlap": 10, "extensions": [".MD"], "visibility": "shared"}
    )
    assert config == {
        "chunk_size": 120,
        "chunk_overlap": 10,
        "extensions": [".md"],
        "visibility": "shared",
    }
    defaults = FileIndex.normalize_config({})
    assert defaults["visibility"] == "private"
    # Every file type is no list at all: the index takes later plugins' types too.
    assert "extensions" not in defaults
    every = FileIndex.get_admin_settings()["extensions"]["choices"]
    assert "extensions" not in FileIndex.normalize_config({"extensions": every})
    bad = [
        ({"chunk_size": 100, "chunk_overlap": 100}, "chunk overlap must be in"),
        ({"chunk_size": 4}, "at least 16 tokens"),
        ({"extensions": []}, "file types must be some of"),
        ({"extensions": [".exe"]}, "file types must be some of"),
        ({"visibility": "public"}, "visibility must be private or shared"),
        ({"chunk_sise": 100}, "unknown index settings: chunk_sise"),
    ]
    for config, message in bad:
        with pytest.raises(ValueError, match=message):
            FileIndex.normalize_config(config)


def test_a_created_index_keeps_its_visibility(tmp_path: Path) -> None:
    app = BaseApp(AppSettings(data_dir=tmp_path / "data")).start()
    config = FileIndex.normalize_config({"visibility": "shared", "chunk_size": 64})
    app.indices.create("Team", "ragloom_app.index.file.FileIndex", config)
    reopened = BaseApp(AppSettings(data_dir=tmp_path / "data")).start().indices.get("Team")
    assert isinstance(reopened, FileIndex)
    assert reopened.setting("visibility") == "shared"
    assert reopened.setting("chunk_size") == 64


def test_the_visibility_shown_is_the_access_the_index_has(tmp_path: Path) -> None:
    app = BaseApp(AppSettings(data_dir=tmp_path / "data")).start()
    file_index = "ragloom_app.index.file.FileIndex"
    defaults = FileIndex.normalize_config({})
    assert defaults["visibility"] == "private"
    # As `ragloom index create` makes one: the local user's, shared, from the defaults.
    cli = app.indices.create("Made on the command line", file_index, dict(defaults))
    assert app.indices.access(cli).shared and cli.setting("visibility") == "shared"
    mine = app.indices.create("Mine", file_index, dict(defaults), owner="u1", shared=False)
    assert mine.setting("visibility") == "private"
    app.indices.share(mine)  # as an import does once every file is in
    assert mine.setting("visibility") == "shared"
    reopened = BaseApp(AppSettings(data_dir=tmp_path / "data")).start().indices
    for name in ("Made on the command line", "Mine"):
        index = reopened.get(name)
        assert reopened.access(index).shared and index.setting("visibility") == "shared"
