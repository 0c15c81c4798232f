"""Retrieval latency over a synthetic corpus: vector, full-text and hybrid queries.

Builds N chunks of 200 words drawn from a fixed 5,000-word vocabulary (Zipf-weighted, so
common words have long posting lists as in real text) and random unit 384-d vectors, puts
them in a ChromaVectorStore and a BM25Store under a temporary folder, and reports p50/p95
query latency of each retriever plus the BM25 index build and load times.

The query embedding is *excluded*: queries use precomputed random vectors. With the real
all-MiniLM-L6-v2 model, embedding a 12-word question adds about 40 ms on a 2-core CPU.

    .venv/bin/python benchmarks/retrieval_latency.py --chunks 10000
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ragloom.retrieval import FullTextRetriever, HybridRetriever, VectorRetriever
from ragloom.schema import Chunk
from ragloom.stores import BM25Store, ChromaVectorStore

WORDS_PER_CHUNK = 200
VOCABULARY = 5000


class PrecomputedEmbedder:
    """Returns the vector prepared for each query text: no model in the timed path."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def embed_query(self, text: str) -> np.ndarray:
        return self.vectors[text]


def unit_vectors(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    vectors = rng.standard_normal((n, dim), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def build_corpus(rng: np.random.Generator, n: int) -> tuple[list[str], list[Chunk]]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = sorted(
        {"".join(rng.choice(letters, size=rng.integers(3, 10))) for _ in range(VOCABULARY)}
    )
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    draws = rng.choice(len(vocab), size=(n, WORDS_PER_CHUNK), p=weights)
    chunks = [
        Chunk(
            id=f"chunk-{i:06d}",
            text=" ".join(vocab[j] for j in row),
            source_id=f"source-{i % 50:02d}",
            source_name=f"file-{i % 50:02d}.pdf",
            page=1 + i % 30,
        )
        for i, row in enumerate(draws)
    ]
    return vocab, chunks


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def latencies(fn: Callable[[str], object], queries: list[str], warmup: int = 5) -> np.ndarray:
    for query in queries[:warmup]:
        fn(query)
    return np.array([timed(lambda q=query: fn(q)) for query in queries]) * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=10000, help="corpus size (default 10000)")
    parser.add_argument("--queries", type=int, default=200, help="queries per retriever")
    parser.add_argument("--dim", type=int, default=384, help="embedding dimensions")
    parser.add_argument(
        "--top-k", type=int, default=5, help="chunks per answer (hybrid fetches 4x)"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    rng = np.random.default_rng(args.seed)
    _, chunks = build_corpus(rng, args.chunks)
    vectors = unit_vectors(rng, args.chunks, args.dim)
    # Questions of 3-8 words taken from random chunks, so they share terms with the corpus.
    queries = []
    for i in rng.integers(0, args.chunks, size=args.queries):
        words = chunks[i].text.split()
        start = int(rng.integers(0, len(words) - 8))
        queries.append(
            f"q{len(queries)} " + " ".join(words[start : start + int(rng.integers(3, 9))])
        )
    embedder = PrecomputedEmbedder(
        dict(zip(queries, unit_vectors(rng, len(queries), args.dim), strict=True))
    )

    with tempfile.TemporaryDirectory(prefix="ragloom-bench-") as tmp:
        folder = Path(tmp)
        vector_store = ChromaVectorStore("bench_chunks", path=folder / "chroma")
        bm25 = BM25Store(folder / "bm25")

        chroma_add = timed(lambda: vector_store.add(chunks, vectors))
        bm25_add = timed(lambda: bm25.add(chunks))
        bm25_build = timed(bm25.ensure_index)  # tokenize + bm25s index + save
        bm25.close()
        bm25 = BM25Store(folder / "bm25")
        bm25_load = timed(bm25.ensure_index)  # what a restart costs

        vector = VectorRetriever(store=vector_store, embeddings=embedder, top_k=args.top_k)
        fulltext = FullTextRetriever(store=bm25, top_k=args.top_k)
        hybrid = HybridRetriever(retrievers=[vector, fulltext], top_k=args.top_k)
        rows = [
            ("vector (Chroma)", latencies(vector, queries)),
            ("full-text (BM25)", latencies(fulltext, queries)),
            ("hybrid (RRF)", latencies(hybrid, queries)),
        ]
        # Restricting to some files: Chroma filters metadata before its vector search,
        # which costs more than searching everything (BM25 just masks scores).
        two = ["source-01", "source-02"]
        for name, retriever in (("vector", vector), ("full-text", fulltext), ("hybrid", hybrid)):
            rows.append(
                (
                    f"{name}, 2 of 50 sources",
                    latencies(lambda q, r=retriever: r(q, source_ids=two), queries),
                )
            )
        bm25.close()

    print(
        f"\n{args.chunks} chunks x {WORDS_PER_CHUNK} words, {args.dim}-d vectors, "
        f"top_k={args.top_k} (hybrid fetches {4 * args.top_k} from each), {args.queries} queries"
    )
    print("Query embedding EXCLUDED (precomputed vectors); the real model adds ~40 ms/query.\n")
    print(f"{'retriever':<28}{'p50 ms':>10}{'p95 ms':>10}")
    for name, values in rows:
        print(f"{name:<28}{np.percentile(values, 50):>10.2f}{np.percentile(values, 95):>10.2f}")
    print(f"\n{'build step':<28}{'seconds':>10}")
    for name, seconds in [
        ("Chroma add (upsert)", chroma_add),
        ("BM25 add (SQLite)", bm25_add),
        ("BM25 index build + save", bm25_build),
        ("BM25 index load", bm25_load),
    ]:
        print(f"{name:<28}{seconds:>10.3f}")


if __name__ == "__main__":
    main()
