"""Vector, full-text and hybrid retrievers over real Chroma and bm25s stores."""

from __future__ import annotations

import math
from collections.abc import Collection
from pathlib import Path

import pytest
from theflow import Param

from ragloom.base import BaseComponent
from ragloom.retrieval import (
    FullTextRetriever,
    HybridRetriever,
    QueryEmbedder,
    Retriever,
    VectorRetriever,
    reciprocal_rank_fusion,
)
from ragloom.schema import Chunk, RetrievedChunk
from ragloom.stores import BM25Store, ChromaVectorStore
from ragloom.stores.base import StoreUnavailableError
from tests.helpers.hashing_embedder import HashingEmbedder


def chunk(chunk_id: str, text: str, source_id: str = "src-a") -> Chunk:
    return Chunk(id=chunk_id, text=text, source_id=source_id, source_name=f"{source_id}.md")


CORPUS = [
    chunk("c1", "solar panels convert sunlight into electricity"),
    chunk("c2", "wind turbines generate electricity from wind"),
    chunk("c3", "the invoice number INV-2291 is due in march"),
    chunk("c4", "battery storage smooths solar electricity output", "src-b"),
    chunk("c5", "a recipe for lemon cake with sugar and butter", "src-b"),
    chunk("c6", "电池储能系统可以平滑太阳能发电", "src-zh"),
    chunk("c7", "hydro power plants use falling water", "src-b"),
    chunk("c8", "nuclear reactors produce steady electricity", "src-b"),
]


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture
def vector_store(tmp_path: Path, embedder: HashingEmbedder) -> ChromaVectorStore:
    store = ChromaVectorStore("retrieval_test", path=tmp_path / "chroma")
    store.add(CORPUS, embedder.embed_documents([c.text for c in CORPUS]))
    return store


@pytest.fixture
def fulltext_store(tmp_path: Path) -> BM25Store:
    store = BM25Store(tmp_path / "bm25")
    store.add(CORPUS)
    return store


@pytest.fixture
def vector(vector_store: ChromaVectorStore, embedder: HashingEmbedder) -> VectorRetriever:
    return VectorRetriever(store=vector_store, embeddings=embedder)


@pytest.fixture
def fulltext(fulltext_store: BM25Store) -> FullTextRetriever:
    return FullTextRetriever(store=fulltext_store)


class FixedRetriever(Retriever):
    """Returns a fixed ranking and records what it was asked.

    theflow refuses undeclared public attributes, so even the call log is a Param.
    """

    ranking: list[str] = Param(default_callback=lambda _: [])
    calls: list[tuple[str, int | None, Collection[str] | None]] = Param(
        default_callback=lambda _: []
    )

    default_name = "fixed"

    def run(
        self,
        query: str,
        top_k: int | None = None,
        source_ids: Collection[str] | None = None,
    ) -> list[RetrievedChunk]:
        self.calls.append((query, top_k, source_ids))
        k = self.resolve_k(top_k)
        return [
            RetrievedChunk(chunk(cid, f"text {cid}"), 10.0 - i, {self.name: 10.0 - i})
            for i, cid in enumerate(self.ranking[:k])
        ]


# --- single retrievers ----------------------------------------------------------------------


def test_hashing_embedder_satisfies_the_protocol(embedder: HashingEmbedder) -> None:
    assert isinstance(embedder, QueryEmbedder)


def test_vector_retriever(vector: VectorRetriever) -> None:
    assert vector.name == "vector"
    hits = vector("solar panels convert sunlight into electricity")
    assert len(hits) == 5  # the top_k param's default
    assert hits[0].chunk.id == "c1"
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    for hit in hits:
        assert hit.found_by == {"vector": hit.score}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_vector_retriever_top_k_and_source_filter(vector: VectorRetriever) -> None:
    assert len(vector("electricity", top_k=2)) == 2
    assert len(VectorRetriever(store=vector.store, embeddings=vector.embeddings, top_k=3)("x"))
    hits = vector("electricity", top_k=10, source_ids=["src-b"])
    assert {h.chunk.source_id for h in hits} == {"src-b"}
    assert vector("electricity", source_ids=[]) == []
    assert vector("   ") == []
    assert vector("electricity", top_k=0) == []


def test_fulltext_retriever(fulltext: FullTextRetriever) -> None:
    assert fulltext.name == "fulltext"
    hits = fulltext("INV-2291")
    assert [h.chunk.id for h in hits] == ["c3"]
    assert hits[0].found_by == {"fulltext": hits[0].score}
    assert [h.chunk.id for h in fulltext("太阳能发电")] == ["c6"]
    assert len(fulltext("electricity", top_k=2)) == 2
    hits = fulltext("electricity", top_k=10, source_ids={"src-b"})
    assert {h.chunk.id for h in hits} == {"c4", "c8"}


def test_empty_stores_return_nothing(tmp_path: Path, embedder: HashingEmbedder) -> None:
    vector = VectorRetriever(
        store=ChromaVectorStore("empty_one", path=tmp_path / "c"), embeddings=embedder
    )
    fulltext = FullTextRetriever(store=BM25Store(tmp_path / "b"))
    hybrid = HybridRetriever(retrievers=[vector, fulltext])
    assert vector("solar") == []
    assert fulltext("solar") == []
    assert hybrid("solar") == []


def test_missing_store_is_a_clear_error(embedder: HashingEmbedder) -> None:
    with pytest.raises(TypeError, match="store must be a VectorStore"):
        VectorRetriever(embeddings=embedder)("q")
    with pytest.raises(TypeError, match="store must be a FullTextStore"):
        FullTextRetriever()("q")
    with pytest.raises(TypeError, match="embed_query"):
        VectorRetriever(store=ChromaVectorStore("never_used", path="/nonexistent"))("q")


# --- theflow parameters -----------------------------------------------------------------------


def test_params_hold_the_given_objects(
    vector: VectorRetriever, fulltext: FullTextRetriever, vector_store: ChromaVectorStore
) -> None:
    assert isinstance(vector, BaseComponent)
    assert vector.store is vector_store  # not copied, not wrapped in a proxy
    hybrid = HybridRetriever(retrievers=[vector, fulltext], top_k=3)
    assert hybrid.retrievers[0] is vector and hybrid.retrievers[1] is fulltext
    assert hybrid.params["top_k"] == 3
    # the default list is not shared between instances
    first, second = HybridRetriever(), HybridRetriever()
    first.retrievers.append(vector)
    assert second.retrievers == []


def test_label_renames_a_retriever(vector: VectorRetriever) -> None:
    labelled = VectorRetriever(store=vector.store, embeddings=vector.embeddings, label="dense")
    assert labelled.name == "dense"
    assert set(labelled("solar")[0].found_by) == {"dense"}


# --- fusion ---------------------------------------------------------------------------------


def test_rrf_fuses_ranks_and_deduplicates() -> None:
    a = FixedRetriever(ranking=["x", "y", "z"], label="a")
    b = FixedRetriever(ranking=["z", "x", "w"], label="b")
    hits = HybridRetriever(retrievers=[a, b], top_k=10)("q")

    assert [h.chunk.id for h in hits] == ["x", "z", "y", "w"]
    by_id = {h.chunk.id: h for h in hits}
    assert by_id["x"].score == pytest.approx(1 / 61 + 1 / 62)
    assert by_id["z"].score == pytest.approx(1 / 63 + 1 / 61)
    assert by_id["y"].score == pytest.approx(1 / 62)
    assert by_id["x"].found_by == {"a": 10.0, "b": 9.0}
    assert by_id["w"].found_by == {"b": 8.0}
    assert len({h.chunk.id for h in hits}) == len(hits)


def test_rrf_ties_are_deterministic() -> None:
    # "p" and "q" have the same fused score (rank 1 in one list each): the better single
    # rank ties, so the list given first wins; then ids decide.
    a = FixedRetriever(ranking=["q", "s"], label="a")
    b = FixedRetriever(ranking=["p", "r"], label="b")
    ids = [h.chunk.id for h in HybridRetriever(retrievers=[a, b])("q")]
    assert ids == ["q", "p", "s", "r"]
    swapped = [h.chunk.id for h in HybridRetriever(retrievers=[b, a])("q")]
    assert swapped == ["p", "q", "r", "s"]
    fused = reciprocal_rank_fusion(
        {"a": [RetrievedChunk(chunk("m", ""), 1.0), RetrievedChunk(chunk("k", ""), 1.0)]},
        rrf_k=0,
    )
    assert [h.chunk.id for h in fused] == ["m", "k"]
    assert fused[0].score == 1.0 and fused[1].score == 0.5


def test_rrf_counts_a_repeated_chunk_once_per_list() -> None:
    hits = [RetrievedChunk(chunk("d", ""), 3.0), RetrievedChunk(chunk("d", ""), 2.0)]
    (fused,) = reciprocal_rank_fusion({"a": hits})
    assert fused.score == pytest.approx(1 / 61)
    assert fused.found_by == {"a": 3.0}


def test_hybrid_respects_top_k_and_fetch_k() -> None:
    a = FixedRetriever(ranking=[f"a{i}" for i in range(50)], label="a")
    b = FixedRetriever(ranking=[f"b{i}" for i in range(50)], label="b")
    hybrid = HybridRetriever(retrievers=[a, b], top_k=3)

    assert len(hybrid("q")) == 3
    assert a.calls[-1][1] == 12  # fetch_k defaults to 4 × top_k
    assert len(hybrid("q", top_k=7)) == 7
    assert b.calls[-1][1] == 28
    hybrid.fetch_k = 5
    assert len(hybrid("q", top_k=2)) == 2
    assert a.calls[-1][1] == 5
    assert hybrid("q", top_k=0) == []


def test_hybrid_forwards_source_ids() -> None:
    a = FixedRetriever(ranking=["x"], label="a")
    HybridRetriever(retrievers=[a])("question", source_ids={"s1"})
    assert a.calls == [("question", 20, {"s1"})]


class AwayRetriever(Retriever):
    """A retriever whose store's server cannot be reached."""

    def run(
        self,
        query: str,
        top_k: int | None = None,
        source_ids: Collection[str] | None = None,
    ) -> list[RetrievedChunk]:
        raise StoreUnavailableError("the Chroma server could not be reached")


def test_hybrid_leaves_out_a_store_that_is_away_and_fails_when_all_are(
    caplog: pytest.LogCaptureFixture,
) -> None:
    words = FixedRetriever(ranking=["x", "y"], label="fulltext")
    hybrid = HybridRetriever(retrievers=[AwayRetriever(label="vector"), words], top_k=2)
    hits = hybrid("q")
    assert [h.chunk.id for h in hits] == ["x", "y"]
    assert all(set(h.found_by) == {"fulltext"} for h in hits)
    assert "vector left out of this search" in caplog.text
    everything_away = HybridRetriever(retrievers=[AwayRetriever(label="a"), AwayRetriever()])
    with pytest.raises(StoreUnavailableError, match="could not be reached"):
        everything_away("q")
    # Any other failure is a bug to see, not an outage to ride out.
    broken = FixedRetriever(ranking=["x"], label="broken")
    broken.ranking = None  # type: ignore[assignment]
    with pytest.raises(TypeError):
        HybridRetriever(retrievers=[broken, words])("q")


def test_hybrid_configuration_errors() -> None:
    with pytest.raises(ValueError, match="at least one"):
        HybridRetriever()("q")
    with pytest.raises(ValueError, match="names must differ"):
        HybridRetriever(retrievers=[FixedRetriever(ranking=["x"]), FixedRetriever(ranking=["y"])])(
            "q"
        )


def test_hybrid_over_real_stores(vector: VectorRetriever, fulltext: FullTextRetriever) -> None:
    hybrid = HybridRetriever(retrievers=[vector, fulltext], top_k=4)
    hits = hybrid("solar electricity")

    assert len(hits) == 4
    assert len({h.chunk.id for h in hits}) == 4
    top = hits[0]
    assert top.chunk.id in {"c1", "c4"}
    assert set(top.found_by) == {"vector", "fulltext"}  # found by both, listed once
    vector_rank = [h.chunk.id for h in vector("solar electricity", top_k=16)]
    text_rank = [h.chunk.id for h in fulltext("solar electricity", top_k=16)]
    expected = sum(
        1 / (60 + ranking.index(top.chunk.id) + 1) for ranking in (vector_rank, text_rank)
    )
    assert math.isclose(top.score, expected)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    # A chunk only BM25 can find (an exact code) still comes through the fusion.
    code_hits = hybrid("INV-2291")
    assert code_hits[0].chunk.id == "c3"
    assert "fulltext" in code_hits[0].found_by

    filtered = hybrid("solar electricity", source_ids=["src-b"])
    assert {h.chunk.source_id for h in filtered} == {"src-b"}
