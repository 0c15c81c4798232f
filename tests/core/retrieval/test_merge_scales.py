"""retrieve_from_all over indices searched differently: scores of one kind of search are
compared, those of different kinds (BM25 against cosine against fused rank) are not."""

from __future__ import annotations

from collections.abc import Collection

from theflow import Param

from ragloom.retrieval import Retriever, retrieve_from_all
from ragloom.schema import Chunk, RetrievedChunk


class FixedRetriever(Retriever):
    """Returns ``scores`` as chunks ``<index>-0``, ``<index>-1``... under ``label``."""

    index: str = Param(help="Names the chunks.")
    scores: list[float] = Param(default_callback=lambda _: [], help="Best first.")

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


def test_searches_of_one_kind_merge_by_score() -> None:
    a = FixedRetriever(index="a", label="hybrid", scores=[0.033, 0.032, 0.031])
    b = FixedRetriever(index="b", label="hybrid", scores=[0.0325, 0.016])
    assert _ids([a, b], 4) == ["a-0", "b-0", "a-1", "a-2"]


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
