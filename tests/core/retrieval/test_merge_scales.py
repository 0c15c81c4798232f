"""retrieve_from_all over several indices: scores of one kind of search are compared where
they mean the same in every index (cosine, fused rank); those of different kinds (BM25
against cosine against fused rank), and BM25 scores of different corpora, are not."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from theflow import Param

from ragloom.retrieval import (
    FullTextRetriever,
    HybridRetriever,
    RerankingRetriever,
    Retriever,
    VectorRetriever,
    retrieve_from_all,
)
from ragloom.retrieval.restricted import ExcludingRetriever
from ragloom.schema import Chunk, RetrievedChunk
from ragloom.stores import BM25Store, ChromaVectorStore
from ragloom_app.testing import HashEmbeddings


class FixedRetriever(Retriever):
    """Returns ``scores`` as chunks ``<index>-0``, ``<index>-1``... under ``label``."""

    index: str = Param(help="Names the chunks.")
    scores: list[float] = Param(default_callback=lambda _: [], help="Best first.")
    comparable: bool = Param(False, help="Whether its scores compare across indices.")

    @property
    def comparable_scores(self) -> bool:
        return bool(self.comparable)

    def run(
        self,
        query: str,
        top_k: int | None = None,
        source_ids: Collection[str] | None = None,
    ) -> list[RetrievedChunk]:
        hits = []
        for n, score in enumerate(self.scores[: self.resolve_k(top_k)]):
            chunk = Chunk(f"{self.index}-{n}", f"text {n}", self.index, f"{self.index}.md")
            hits.append(RetrievedChunk(chunk, score, {self.name: score}))
        return hits


def _ids(retrievers: list[Retriever], top_k: int) -> list[str]:
    return [hit.chunk.id for hit in retrieve_from_all(retrievers, "q", top_k)]


def test_searches_of_one_kind_merge_by_score_where_scores_compare() -> None:
    a = FixedRetriever(index="a", label="hybrid", scores=[0.033, 0.032, 0.031], comparable=True)
    b = FixedRetriever(index="b", label="hybrid", scores=[0.0325, 0.016], comparable=True)
    assert _ids([a, b], 4) == ["a-0", "b-0", "a-1", "a-2"]
    # A retriever that does not say its scores compare is merged by rank.
    c = FixedRetriever(index="c", label="hybrid", scores=[0.0325, 0.016])
    assert _ids([a, c], 4) == ["a-0", "c-0", "a-1", "c-1"]


def test_searches_of_different_kinds_take_turns_by_rank() -> None:
    hybrid = FixedRetriever(index="a", label="hybrid", scores=[0.033, 0.032, 0.031])
    vector = FixedRetriever(index="b", label="vector", scores=[0.61, 0.60, 0.59])
    fulltext = FixedRetriever(index="c", label="fulltext", scores=[14.2, 9.1, 3.3])
    # By score the BM25 list would take every place, then the cosine one.
    assert _ids([hybrid, vector, fulltext], 5) == ["a-0", "b-0", "c-0", "a-1", "b-1"]
    assert _ids([hybrid, vector], 3) == ["a-0", "b-0", "a-1"]


def test_a_list_that_runs_out_leaves_its_turns_to_the_others() -> None:
    short = FixedRetriever(index="a", label="vector", scores=[0.7])
    long = FixedRetriever(index="b", label="fulltext", scores=[5.0, 4.0, 3.0])
    assert _ids([short, long], 4) == ["a-0", "b-0", "b-1", "b-2"]


def _bm25(tmp_path: Path, name: str, chunks: list[Chunk]) -> BM25Store:
    store = BM25Store(tmp_path / name)
    store.add(chunks)
    return store


def test_full_text_of_a_small_index_is_not_outscored_by_a_large_one(tmp_path: Path) -> None:
    # The small index holds the answer, with every word of the question; in the large one
    # "pump" is rare (5 of 2,000 chunks), so its BM25 score is higher than the answer's.
    small = _bm25(
        tmp_path,
        "reactor",
        [
            Chunk("a-0", "The coolant pump pressure is 12 bar.", "sa", "reactor.md"),
            Chunk("a-1", "The coolant pump was replaced in May and coolant checked.", "sa", "r.md"),
            Chunk("a-2", "Staff lunch is at noon.", "sa", "reactor.md"),
        ],
    )
    big = _bm25(
        tmp_path,
        "archive",
        [
            Chunk(f"b-{i}", f"Garden pump number {i} was cleaned.", "sb", "archive.md")
            if i < 5
            else Chunk(f"b-{i}", f"Minutes of meeting {i} about budgets.", "sb", "archive.md")
            for i in range(2000)
        ],
    )
    question = "coolant pump pressure"
    assert big.query(question, 1)[0][1] > small.query(question, 1)[0][1]
    both = [FullTextRetriever(store=small), FullTextRetriever(store=big)]
    assert _ids_for(both, question, 4) == ["a-0", "b-0", "a-1", "b-1"]


def _ids_for(retrievers: list[Retriever], question: str, top_k: int) -> list[str]:
    return [hit.chunk.id for hit in retrieve_from_all(retrievers, question, top_k)]


def _hybrid(tmp_path: Path, name: str, chunks: list[Chunk]) -> HybridRetriever:
    embeddings = HashEmbeddings()
    vectors = ChromaVectorStore(f"merge_{name}", path=tmp_path / name / "chroma")
    vectors.add(chunks, embeddings.embed_documents([c.text for c in chunks]))
    terms = _bm25(tmp_path / name, "bm25", chunks)
    return HybridRetriever(
        retrievers=[
            VectorRetriever(store=vectors, embeddings=embeddings),
            FullTextRetriever(store=terms),
        ]
    )


def test_hybrid_searches_of_two_indices_merge_by_fused_rank(tmp_path: Path) -> None:
    # Both of a's chunks are found by both searches; b's only chunk by the vectors alone,
    # so its fused score (one list's first place) is below either of a's.
    a = _hybrid(
        tmp_path,
        "a",
        [
            Chunk("a-0", "The coolant pump pressure is 12 bar.", "sa", "a.md"),
            Chunk("a-1", "Coolant flows through the pump.", "sa", "a.md"),
        ],
    )
    b = _hybrid(tmp_path, "b", [Chunk("b-0", "Minutes about budgets.", "sb", "b.md")])
    question = "coolant pump pressure"
    assert _ids_for([a, b], question, 3) == ["a-0", "a-1", "b-0"]
    # Wrapped (as the file index wraps its search), the scores still compare.
    wrapped = [
        RerankingRetriever(inner=ExcludingRetriever(inner=r, excluded_ids=["none"])) for r in (a, b)
    ]
    assert _ids_for(list(wrapped), question, 3) == ["a-0", "a-1", "b-0"]
