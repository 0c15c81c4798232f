"""FullQA's merge of several retrievers keeps the order each one chose (MMR, reranking)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragloom.retrieval import FullTextRetriever, MMRReranker, RerankingRetriever, retrieve_from_all
from ragloom.schema import Chunk
from ragloom.stores import BM25Store, ChromaVectorStore


def _store(tmp_path: Path, name: str, texts: dict[str, str]) -> BM25Store:
    store = BM25Store(tmp_path / name)
    store.add(
        [Chunk(id=i, text=t, source_id=name, source_name=f"{name}.md") for i, t in texts.items()]
    )
    return store


def test_merge_keeps_an_mmr_order_and_interleaves_by_rank(tmp_path: Path) -> None:
    texts = {
        "a": "pump pump pump valve",
        "b": "pump pump valve",
        "c": "pump valve valve valve",
    }
    terms = _store(tmp_path, "plant", texts)
    plain = FullTextRetriever(store=terms)
    assert [h.chunk.id for h in plain("pump", top_k=3)] == ["a", "b", "c"]
    # a and b point the same way, c elsewhere: MMR puts c (a lower score) before b.
    vectors = ChromaVectorStore("merge_test", path=tmp_path / "chroma")
    chunks = [
        Chunk(id=i, text=t, source_id="plant", source_name="plant.md") for i, t in texts.items()
    ]
    vectors.add(chunks, np.array([[1, 0], [1, 0.01], [0, 1]], dtype=np.float32))
    diverse = RerankingRetriever(
        inner=plain, rerankers=[MMRReranker(vector_store=vectors, lambda_mult=0.5)]
    )
    assert [h.chunk.id for h in retrieve_from_all([diverse], "pump", top_k=3)] == ["a", "c", "b"]
    # With a second index the lists take turns (two corpora's BM25 scores do not
    # compare); each list keeps its order.
    other = FullTextRetriever(store=_store(tmp_path, "office", {"o": "pump pump pump pump"}))
    merged = [h.chunk.id for h in retrieve_from_all([diverse, other], "pump", top_k=4)]
    assert merged == ["a", "o", "c", "b"]


def test_a_chunk_found_twice_is_kept_once(tmp_path: Path) -> None:
    terms = _store(tmp_path, "plant", {"a": "pump valve", "b": "valve seal"})
    twice = [FullTextRetriever(store=terms), FullTextRetriever(store=terms)]
    assert [h.chunk.id for h in retrieve_from_all(twice, "valve", top_k=5)] == ["a", "b"]
