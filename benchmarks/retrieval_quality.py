"""Retrieval quality on the State of the Union set: recall@k of full-text, vector and hybrid.

The speech is indexed at several chunk sizes (tokens of the embedding model, overlap 15 %)
with the real stores (Chroma, BM25) and the configured embedding model. The sotu set has
no gold passages, so relevance is derived from the gold answers:

- content words of a text: its lowercased ``\\w+`` tokens minus NLTK's English stopword
  list (179 words, the copy shipped as ``bm25s.stopwords.STOPWORDS_EN_PLUS``);
- a chunk is relevant to a question when it contains at least 60 % of the distinct
  content words of the gold answer;
- recall@k of a question is 1 when a relevant chunk is among the first k retrieved, else 0
  (the usual "hit" recall for single-answer QA); the tables give its mean in %.

Questions with no relevant chunk at any chunk size (answers that paraphrase, or compute
something) are skipped; how many is printed, with how many have a relevant chunk at each
size. The question's fixed prefix "Based on State of the Union Address 2023:" is removed
before retrieval (no user types it; ``--keep-prefix`` keeps it).

The bundled model embeds at most 254 tokens (256 with [CLS] and [SEP]): a 300-token chunk
is embedded from its first 254 tokens only, while BM25 sees all of it. Larger chunks also
make the 60 % rule easier to meet, so sizes are also compared at an equal evidence budget
(about 1,000 tokens: k = 1000 / size). Goal: hybrid >= the better single retriever. A
second table tries RRF k, fetch_k and weights.

    .venv/bin/python benchmarks/retrieval_quality.py [--sizes 100,200,300] [--backend onnx]
"""

from __future__ import annotations

import argparse
import csv
import logging
import re
import tempfile
from pathlib import Path

import numpy as np
from _common import REPO, configured_embeddings
from bm25s.stopwords import STOPWORDS_EN_PLUS

from ragloom.embeddings import Embeddings
from ragloom.retrieval import (
    FullTextRetriever,
    HybridRetriever,
    Retriever,
    VectorRetriever,
)
from ragloom.schema import Chunk, Page
from ragloom.splitters import TokenSplitter
from ragloom.stores import BM25Store, ChromaVectorStore

DEFAULT_DATA = REPO.parent / "shared" / "data" / "sotu"
PREFIX = re.compile(r"^\s*Based on State of the Union Address 2023:\s*", re.IGNORECASE)
STOPWORDS = frozenset(STOPWORDS_EN_PLUS)
THRESHOLD = 0.6
KS = (1, 3, 5, 10)
Ranking = dict[str, list[str]]  # retriever name -> chunk ids, best first


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower()) if w not in STOPWORDS}


def relevant_ids(chunks: list[Chunk], answers: list[str]) -> list[set[str]]:
    """For each answer, the ids of the chunks holding >= THRESHOLD of its content words."""
    words = [(c.id, content_words(c.text)) for c in chunks]
    found = []
    for answer in answers:
        wanted = content_words(answer)
        need = THRESHOLD * len(wanted)
        found.append({i for i, have in words if wanted and len(wanted & have) >= need})
    return found


class CachedQueries:
    """Embeds each question once; the retrievers ask again for every k and setting."""

    def __init__(self, embeddings: Embeddings) -> None:
        self.embeddings = embeddings
        self.cache: dict[str, np.ndarray] = {}

    def embed_query(self, text: str) -> np.ndarray:
        if text not in self.cache:
            self.cache[text] = self.embeddings.embed_query(text)
        return self.cache[text]


def recall(rankings: list[list[str]], relevant: list[set[str]], k: int) -> float:
    hits = [bool(set(r[:k]) & rel) for r, rel in zip(rankings, relevant, strict=True)]
    return 100.0 * sum(hits) / len(hits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the sotu data folder")
    parser.add_argument("--sizes", default="100,200,240,300", help="chunk sizes in tokens")
    parser.add_argument("--overlap", type=float, default=0.15, help="overlap, share of size")
    parser.add_argument("--backend", choices=["torch", "onnx"], help="default: flowsettings")
    parser.add_argument(
        "--precision", choices=["fp32", "bf16", "int8"], help="default: flowsettings"
    )
    parser.add_argument("--keep-prefix", action="store_true", help="keep the question prefix")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    text = (args.data / "state_of_the_union.txt").read_text(encoding="utf-8")
    with (args.data / "sotu_qa.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    questions = [r["question"] if args.keep_prefix else PREFIX.sub("", r["question"]) for r in rows]
    answers = [r["answer"] for r in rows]
    embeddings = configured_embeddings(args.backend, args.precision)
    queries = CachedQueries(embeddings)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    per_size: dict[int, tuple[list[Chunk], list[set[str]]]] = {}
    for size in sizes:
        splitter = TokenSplitter(
            chunk_size=size,
            chunk_overlap=round(args.overlap * size),
            tokenizer=embeddings.count_tokens,
        )
        chunks = splitter([Page(text, number=1)], source_id="sotu", source_name="sotu.txt")
        per_size[size] = (chunks, relevant_ids(chunks, answers))
    kept = [i for i in range(len(rows)) if any(per_size[s][1][i] for s in sizes)]
    print(
        f"Retrieval quality, sotu: {len(rows)} questions, {len(rows) - len(kept)} skipped "
        f"(no chunk holds >= {THRESHOLD:.0%} of the answer's content words at any size), "
        f"{len(kept)} kept; embeddings: {getattr(embeddings, 'backend', '?')} backend"
    )

    table: dict[int, dict[str, list[float]]] = {}
    tuning: dict[int, dict[str, Ranking]] = {}
    with tempfile.TemporaryDirectory(prefix="ragloom-quality-") as tmp:
        for size in sizes:
            chunks, relevant = per_size[size]
            vector_store = ChromaVectorStore(f"quality_{size}", path=Path(tmp) / "chroma")
            fulltext_store = BM25Store(Path(tmp) / f"bm25-{size}")
            vector_store.add(chunks, embeddings.embed_documents([c.text for c in chunks]))
            fulltext_store.add(chunks)
            vector = VectorRetriever(store=vector_store, embeddings=queries)
            fulltext = FullTextRetriever(store=fulltext_store)
            hybrid = HybridRetriever(retrievers=[vector, fulltext])
            picked = [questions[i] for i in kept]
            gold = [relevant[i] for i in kept]
            answerable = sum(1 for g in gold if g)
            print(
                f"  {size} tokens (overlap {round(args.overlap * size)}): {len(chunks)} chunks, "
                f"{answerable} of {len(kept)} kept questions have a relevant chunk"
            )
            table[size] = {}
            named: list[tuple[str, Retriever]] = [
                ("full-text", fulltext),
                ("vector", vector),
                ("hybrid", hybrid),
            ]
            for name, retriever in named:
                table[size][name] = [
                    recall([ids(retriever(q, top_k=k)) for q in picked], gold, k) for k in KS
                ]
            # Deep lists of each single retriever, fused offline for the tuning table.
            tuning[size] = {
                "vector": {q: ids(vector(q, top_k=50)) for q in picked},
                "fulltext": {q: ids(fulltext(q, top_k=50)) for q in picked},
                "_gold": {q: sorted(g) for q, g in zip(picked, gold, strict=True)},
            }
            fulltext_store.close()

    print(f"\nrecall@k in % over the {len(kept)} kept questions (RRF k=60, fetch_k = 4 x k)")
    print(f"{'size':>5} {'retriever':<10}" + "".join(f"{'@' + str(k):>7}" for k in KS))
    for size in sizes:
        singles = zip(table[size]["full-text"], table[size]["vector"], strict=True)
        best_single = [max(a, b) for a, b in singles]
        for name, values in table[size].items():
            print(f"{size:>5} {name:<10}" + "".join(f"{v:>7.1f}" for v in values))
        every_k = all(h >= b for h, b in zip(table[size]["hybrid"], best_single, strict=True))
        means = {name: float(np.mean(values)) for name, values in table[size].items()}
        on_mean = means["hybrid"] >= max(means["full-text"], means["vector"])
        print(
            f"{'':>5} hybrid >= better single: at every k {'yes' if every_k else 'NO'}; "
            f"on the mean of the four ({means['hybrid']:.1f} vs full-text "
            f"{means['full-text']:.1f}, vector {means['vector']:.1f}) "
            f"{'yes' if on_mean else 'NO'}"
        )
    print_budget(tuning, sizes)
    print_tuning(tuning, sizes)


def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.chunk.id for h in hits]


def fused(
    lists: dict[str, list[str]], rrf_k: int, fetch: int, weights: dict[str, float]
) -> list[str]:
    """Weighted RRF over the first ``fetch`` ids of each list; all weights 1 and ties broken
    as :func:`ragloom.retrieval.reciprocal_rank_fusion` does (best rank, first list, id).
    """
    scores: dict[str, float] = {}
    tie: dict[str, tuple[int, int]] = {}
    for position, (name, ranked) in enumerate(lists.items()):
        for rank, chunk_id in enumerate(ranked[:fetch], start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weights[name] / (rrf_k + rank)
            best, first = tie.get(chunk_id, (rank, position))
            tie[chunk_id] = (min(best, rank), first)
    return sorted(scores, key=lambda c: (-scores[c], *tie[c], c))


def print_budget(
    tuning: dict[int, dict[str, Ranking]], sizes: list[int], budget: int = 1000
) -> None:
    """Recall of each retriever when k chunks fill about ``budget`` tokens of evidence."""
    print(f"\nrecall in % at an equal evidence budget (~{budget} tokens: k = {budget} / size)")
    print(f"{'size':>5}{'k':>4}{'full-text':>11}{'vector':>8}{'hybrid':>8}")
    for size in sizes:
        data = tuning[size]
        questions = list(data["_gold"])
        gold = [set(data["_gold"][q]) for q in questions]
        k = max(1, round(budget / size))
        cells = []
        for weights in ({"vector": 0, "fulltext": 1}, {"vector": 1, "fulltext": 0}, None):
            lists = [
                {"vector": data["vector"][q], "fulltext": data["fulltext"][q]} for q in questions
            ]
            if weights is None:  # the library's hybrid: plain RRF over 4k from each
                rankings = [
                    fused(lists_q, 60, 4 * k, {"vector": 1, "fulltext": 1}) for lists_q in lists
                ]
            else:
                rankings = [fused(lists_q, 60, 50, weights) for lists_q in lists]
            cells.append(recall(rankings, gold, k))
        print(f"{size:>5}{k:>4}{cells[0]:>11.1f}{cells[1]:>8.1f}{cells[2]:>8.1f}")


def print_tuning(tuning: dict[int, dict[str, Ranking]], sizes: list[int]) -> None:
    """Mean of recall@1/3/5/10 for RRF settings, fusing the saved single-retriever lists."""
    settings: list[tuple[str, int, int | None, dict[str, float]]] = [
        ("RRF k=60, fetch 4k (default)", 60, None, {"vector": 1, "fulltext": 1}),
        ("RRF k=10, fetch 4k", 10, None, {"vector": 1, "fulltext": 1}),
        ("RRF k=30, fetch 4k", 30, None, {"vector": 1, "fulltext": 1}),
        ("RRF k=100, fetch 4k", 100, None, {"vector": 1, "fulltext": 1}),
        ("RRF k=60, fetch k", 60, 1, {"vector": 1, "fulltext": 1}),
        ("RRF k=60, fetch 50", 60, 50, {"vector": 1, "fulltext": 1}),
        ("RRF k=60, vector x2", 60, None, {"vector": 2, "fulltext": 1}),
        ("RRF k=60, full-text x2", 60, None, {"vector": 1, "fulltext": 2}),
        ("vector alone", 60, None, {"vector": 1, "fulltext": 0}),
        ("full-text alone", 60, None, {"vector": 0, "fulltext": 1}),
    ]
    print("\nfusion settings: mean of recall@1/3/5/10 in % (same lists, fused offline)")
    print(f"{'setting':<30}" + "".join(f"{s:>8}" for s in sizes))
    for label, rrf_k, fetch, weights in settings:
        cells = []
        for size in sizes:
            data = tuning[size]
            questions = list(data["_gold"])
            gold = [set(data["_gold"][q]) for q in questions]
            values = []
            for k in KS:
                depth = 4 * k if fetch is None else (k if fetch == 1 else fetch)
                rankings = [
                    fused(
                        {"vector": data["vector"][q], "fulltext": data["fulltext"][q]},
                        rrf_k,
                        depth,
                        weights,
                    )
                    for q in questions
                ]
                values.append(recall(rankings, gold, k))
            cells.append(f"{np.mean(values):>8.1f}")
        print(f"{label:<30}" + "".join(cells))


if __name__ == "__main__":
    main()
