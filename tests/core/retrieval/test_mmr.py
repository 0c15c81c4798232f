"""MMR: the greedy order itself, and the reranker over real Chroma vectors and MiniLM."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from ragloom.embeddings import SentenceTransformerEmbeddings
from ragloom.retrieval import MMRReranker, mmr_order
from ragloom.schema import Chunk, RetrievedChunk
from ragloom.stores import ChromaVectorStore
from ragloom.stores.chroma import chroma_http_client
from tests.helpers.chroma_server import chroma_server


def _unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


# a and b are near-duplicates, c points elsewhere.
VECTORS = np.stack([_unit(1, 0, 0), _unit(0.99, 0.1, 0), _unit(0, 1, 0.2)])


def test_lambda_one_keeps_the_relevance_order() -> None:
    assert mmr_order([3.0, 2.0, 1.0], VECTORS, lambda_mult=1.0, k=3) == [0, 1, 2]


def test_a_near_duplicate_gives_way_to_a_different_chunk() -> None:
    assert mmr_order([3.0, 2.9, 2.0], VECTORS, lambda_mult=0.5, k=3) == [0, 2, 1]


def test_lambda_zero_is_diversity_alone_after_the_most_relevant() -> None:
    vectors = np.stack([_unit(1, 0), _unit(0.9, 0.1), _unit(-1, 0.05)])
    assert mmr_order([1.0, 0.9, 0.1], vectors, lambda_mult=0.0, k=2) == [0, 2]


def test_k_is_capped_and_equal_scores_keep_their_order() -> None:
    same = np.stack([_unit(1, 0)] * 3)
    assert mmr_order([1.0, 1.0, 1.0], same, lambda_mult=0.5, k=10) == [0, 1, 2]
    assert mmr_order([1.0], same[:1], lambda_mult=0.5, k=0) == []


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="lambda_mult"):
        mmr_order([1.0, 2.0], VECTORS[:2], lambda_mult=1.5, k=1)
    with pytest.raises(ValueError, match="one vector per item"):
        mmr_order([1.0, 2.0], VECTORS, lambda_mult=0.5, k=1)


def _hits(texts: list[str]) -> list[RetrievedChunk]:
    # Scores fall with the position, as a retriever returns them.
    return [
        RetrievedChunk(
            Chunk(id=f"c{i}", text=text, source_id="s", source_name="s.md"),
            score=1.0 / (60 + i),
            found_by={"vector": 0.5},
        )
        for i, text in enumerate(texts, start=1)
    ]


TEXTS = [
    "The cooling loop of the reactor is flushed every 90 days by the night shift.",
    "Every 90 days the night shift flushes the cooling loop of the reactor.",
    "Spare pumps for the plant are kept in hall C next to the workshop.",
    "Twelve engineers run the plant in three shifts of four.",
]


@pytest.fixture(scope="module")
def embeddings() -> SentenceTransformerEmbeddings:
    return SentenceTransformerEmbeddings()


@pytest.fixture
def store(tmp_path: Path, embeddings: SentenceTransformerEmbeddings) -> ChromaVectorStore:
    store = ChromaVectorStore("mmr_test", path=tmp_path / "chroma")
    hits = _hits(TEXTS)
    store.add([h.chunk for h in hits], embeddings.embed_documents(TEXTS))
    return store


def test_chroma_gives_back_the_vectors_it_was_given(
    store: ChromaVectorStore, embeddings: SentenceTransformerEmbeddings
) -> None:
    vectors = store.vectors(["c3", "missing", "c1"])
    assert set(vectors) == {"c1", "c3"}
    expected = embeddings.embed_documents([TEXTS[0]])[0]
    np.testing.assert_allclose(vectors["c1"], expected, atol=1e-6)
    assert store.vectors([]) == {}


def test_mmr_reranker_moves_the_paraphrase_down(store: ChromaVectorStore) -> None:
    hits = _hits(TEXTS)
    reranked = MMRReranker(vector_store=store, lambda_mult=0.5)("cooling loop", hits, top_k=3)
    assert [h.chunk.id for h in reranked] == ["c1", "c3", "c4"]
    # Only the order changes: scores and found_by are the retriever's.
    assert reranked[1].score == hits[2].score and reranked[1].found_by == {"vector": 0.5}
    relevance_only = MMRReranker(vector_store=store, lambda_mult=1.0)("q", hits, top_k=3)
    assert [h.chunk.id for h in relevance_only] == ["c1", "c2", "c3"]


def test_chunks_the_store_lacks_are_embedded_again(
    tmp_path: Path, embeddings: SentenceTransformerEmbeddings
) -> None:
    empty = ChromaVectorStore("mmr_empty", path=tmp_path / "chroma")
    reranker = MMRReranker(vector_store=empty, embeddings=embeddings, lambda_mult=0.5)
    assert [h.chunk.id for h in reranker("q", _hits(TEXTS), top_k=3)] == ["c1", "c3", "c4"]
    with pytest.raises(ValueError, match="MMR needs vectors for 4 chunks"):
        MMRReranker(vector_store=empty)("q", _hits(TEXTS), top_k=2)


def test_a_chroma_server_away_does_not_fail_the_search(
    tmp_path: Path, embeddings: SentenceTransformerEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    hits = _hits(TEXTS)
    with chroma_server(tmp_path / "server") as server:
        store = ChromaVectorStore("mmr_away", client=chroma_http_client("127.0.0.1", server.port))
        store.add([h.chunk for h in hits], embeddings.embed_documents(TEXTS))
        server.stop()
        with caplog.at_level(logging.WARNING, logger="ragloom.retrieval.mmr"):
            # With an embedder, the chunks are embedded again: the same MMR order.
            again = MMRReranker(vector_store=store, embeddings=embeddings, lambda_mult=0.5)
            assert [h.chunk.id for h in again("q", hits, top_k=3)] == ["c1", "c3", "c4"]
            # Without one, the candidates keep the search's order.
            kept = MMRReranker(vector_store=store, lambda_mult=0.5)("q", hits, top_k=3)
            assert [h.chunk.id for h in kept] == ["c1", "c2", "c3"]
    embedded, skipped = [r.getMessage() for r in caplog.records]
    assert "could not be reached" in embedded and "embedding the 4 chunks again" in embedded
    assert skipped.startswith("MMR skipped, the search's order kept: the Chroma server")
