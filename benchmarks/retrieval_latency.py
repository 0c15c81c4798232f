"""Retrieval latency at 10k and 100k chunks: hybrid, vector and full-text, query embedding included.

The corpus is synthetic but shaped like real text: each chunk is ~150 words of whole
sentences drawn from the State of the Union speech plus ~50 words from a 50,000-word
made-up vocabulary drawn by Zipf's law (so the vocabulary keeps growing with the corpus,
as real collections do). Vectors are random unit vectors (embedding 100k chunks would take
an hour). The queries are the 74 real questions of the sotu set, embedded live by the
configured model, so common words ("president", "american") hit long posting lists.

Built stores are cached between runs (Chroma takes minutes at 100k) under ``--cache``
(default ``$TMPDIR/ragloom-retrieval-bench``), one folder per size, trusted only once its
``complete`` marker is written (a half-built folder is rebuilt). Every query runs each
retriever in turn (interleaved), for ``--rounds`` rounds; latencies are p50/p95 over all.
Goal at 100k: hybrid p50 <= 50 ms and p95 <= 100 ms. The definition prior (the file
index's default) is timed beside plain hybrid, on the questions as they are (no code
names: the prior only looks for them) and with a code name appended (it reads every
fused candidate), and the p50 ratios are printed.

    .venv/bin/python benchmarks/retrieval_latency.py --sizes 10000,100000
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from _common import REPO, configured_embeddings

from ragloom.embeddings import Embeddings
from ragloom.retrieval import (
    DefinitionPrior,
    FullTextRetriever,
    HybridRetriever,
    VectorRetriever,
)
from ragloom.schema import Chunk
from ragloom.stores import BM25Store, ChromaVectorStore
from ragloom.stores.base import FullTextStore, VectorStore

DEFAULT_DATA = REPO.parent / "shared" / "data" / "sotu"
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "ragloom-retrieval-bench"
CORPUS_VERSION = 2  # bump when the corpus recipe changes, so cached stores rebuild
# 2: Chroma keeps no chunk texts (the BM25 store holds them), as the file index's does
DIM = 384
SOURCES = 50
BATCH = 5000
PROGRESS = "progress.json"  # how far a fill got, in the folder being filled
NAMED = " What does sqlite3_open_v2() return?"  # appended: a question that names code


def build_chunks(text: str, n: int, seed: int) -> list[Chunk]:
    rng = np.random.default_rng(seed)
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s]
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(rng.choice(letters, size=int(rng.integers(4, 11)))) for _ in range(50_000)]
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    rare = rng.choice(len(vocab), size=(n, 50), p=weights)
    chunks = []
    for i in range(n):
        words: list[str] = []
        while len(words) < 150:
            words.extend(sentences[int(rng.integers(len(sentences)))].split())
        body = " ".join(words) + " " + " ".join(vocab[j] for j in rare[i])
        chunks.append(
            Chunk(
                id=f"chunk-{i:06d}",
                text=body,
                source_id=f"source-{i % SOURCES:02d}",
                source_name=f"file-{i % SOURCES:02d}.pdf",
                page=1 + i % 30,
            )
        )
    return chunks


def corpus(size: int, text: str) -> tuple[list[Chunk], np.ndarray]:
    """The benchmark's ``size`` chunks and their (random, unit) vectors, the same each run."""
    chunks = build_chunks(text, size, seed=size)
    vectors = np.random.default_rng(size + 1).standard_normal((size, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return chunks, vectors


def fill_progress(folder: Path, steps: Sequence[str]) -> tuple[int, dict[str, float]]:
    """How far an earlier run filled ``folder`` before it was stopped: the chunks it added
    and the seconds each of ``steps`` took (none and zeros for a fill not started)."""
    try:
        noted = json.loads((folder / PROGRESS).read_text(encoding="utf-8"))
        return int(noted["done"]), {step: float(noted["times"][step]) for step in steps}
    except (OSError, ValueError, KeyError, TypeError):
        return 0, dict.fromkeys(steps, 0.0)


def note_progress(folder: Path, done: int, times: dict[str, float]) -> None:
    """Note that the first ``done`` chunks are in ``folder``'s stores (so a stopped fill
    goes on from there: every add replaces chunks of the same ids)."""
    noted = json.dumps({"done": done, "times": times})
    (folder / f"{PROGRESS}.new").write_text(noted, encoding="utf-8")
    (folder / f"{PROGRESS}.new").replace(folder / PROGRESS)


def fill_stores(
    folder: Path,
    stores: dict[str, VectorStore | FullTextStore],
    chunks: list[Chunk],
    vectors: np.ndarray,
) -> dict[str, float]:
    """Add ``chunks`` (with ``vectors``) to each store of ``stores``, a batch at a time, as
    an ingestion would, from where a stopped fill of ``folder`` got to; the seconds each
    store took, by its name in ``stores``."""
    done, times = fill_progress(folder, list(stores))
    for first in range(done, len(chunks), BATCH):
        part = slice(first, first + BATCH)
        for name, store in stores.items():
            started = time.perf_counter()
            if isinstance(store, VectorStore):
                store.add(chunks[part], vectors[part])
            else:
                store.add(chunks[part])
            times[name] += time.perf_counter() - started
        note_progress(folder, first + BATCH, times)
        if (first + BATCH) % 100_000 == 0:
            print(f"  {first + BATCH} chunks in {folder.name}", flush=True)
    return times


def stores_for(size: int, cache: Path, text: str) -> tuple[Path, dict[str, float]]:
    """The folder holding a built Chroma + BM25 corpus of ``size`` chunks, and build times.
    A build that was stopped goes on where it was."""
    final = cache / f"corpus-v{CORPUS_VERSION}-{size}"
    if (final / "complete").is_file():
        # The build times of the run that built it, so every run can show them.
        try:
            built = json.loads((final / "complete").read_text(encoding="utf-8"))
        except ValueError:  # a marker from before build times were kept
            built = {}
        return final, {f"{name} (when built)": seconds for name, seconds in built.items()}
    # Built in place: Chroma's client keeps the folder open, so it cannot be renamed after.
    work = final
    done = fill_progress(work, [])[0]
    if not done:
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    print(
        f"building a {size}-chunk corpus in {work} (cached for later runs), from {done} ...",
        flush=True,
    )
    chunks, vectors = corpus(size, text)
    bm25 = BM25Store(work / "bm25")
    vector_store = ChromaVectorStore("bench_chunks", path=work / "chroma", texts_from=bm25)
    stores = {"Chroma add": vector_store, "BM25 add (SQLite)": bm25}
    times = fill_stores(work, stores, chunks, vectors)
    started = time.perf_counter()
    bm25.ensure_index()
    times["BM25 index build + save"] = time.perf_counter() - started
    bm25.close()
    (work / "complete").write_text(json.dumps(times), encoding="utf-8")
    return work, times


def percentiles(values: list[float]) -> tuple[float, float]:
    array = np.asarray(values) * 1000.0
    return float(np.percentile(array, 50)), float(np.percentile(array, 95))


def measure(
    runs: dict[str, Callable[[str], object]], queries: list[str], rounds: int
) -> dict[str, list[float]]:
    for query in queries[:5]:  # warm up caches and lazy loads
        for run in runs.values():
            run(query)
    times: dict[str, list[float]] = {name: [] for name in runs}
    order = list(runs)
    rng = random.Random(0)
    for _ in range(rounds):
        for query in queries:
            rng.shuffle(order)
            for name in order:
                started = time.perf_counter()
                runs[name](query)
                times[name].append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="corpus sizes, comma-separated")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the sotu data folder")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="built corpora")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the 74 questions")
    parser.add_argument("--top-k", type=int, default=5, help="chunks per answer")
    parser.add_argument("--backend", choices=["torch", "onnx"], help="default: flowsettings")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    text = (args.data / "state_of_the_union.txt").read_text(encoding="utf-8")
    with (args.data / "sotu_qa.csv").open(encoding="utf-8") as handle:
        queries = [row["question"] for row in csv.DictReader(handle)]
    embeddings = configured_embeddings(args.backend)
    embeddings.embed_query("warm up")
    # The other backend's query embedding, timed in the same rounds for comparison.
    other = configured_embeddings("torch" if describe(embeddings).startswith("onnx") else "onnx")
    other.embed_query("warm up")

    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        bench_size(size, args, text, queries, embeddings, other)


def bench_size(
    size: int,
    args: argparse.Namespace,
    text: str,
    queries: list[str],
    embeddings: Embeddings,
    other: Embeddings,
) -> None:
    """Build (or reuse) the corpus of ``size`` chunks, time every retriever, print."""
    folder, build = stores_for(size, args.cache, text)
    bm25 = BM25Store(folder / "bm25")
    vector_store = ChromaVectorStore("bench_chunks", path=folder / "chroma", texts_from=bm25)
    started = time.perf_counter()
    bm25.ensure_index()
    build["BM25 index load (restart)"] = time.perf_counter() - started
    k = args.top_k
    vector = VectorRetriever(store=vector_store, embeddings=embeddings, top_k=k)
    fulltext = FullTextRetriever(store=bm25, top_k=k)
    hybrid = HybridRetriever(retrievers=[vector, fulltext], top_k=k)
    # The file index's default: the prior orders the fused candidates (docs/indices.md).
    prior = HybridRetriever(retrievers=[vector, fulltext], top_k=k, prior=DefinitionPrior())
    fixed = {q: embeddings.embed_query(q) for q in queries}
    two = ["source-01", "source-02"]
    runs: dict[str, Callable[[str], object]] = {
        "hybrid (embed + Chroma + BM25 + RRF)": hybrid,
        "hybrid + definition prior": prior,
        # The prior reads the candidates only when the question names code.
        "hybrid, a code name in the question": lambda q: hybrid(q + NAMED),
        "hybrid + prior, a code name in it": lambda q: prior(q + NAMED),
        "vector (embed + Chroma)": vector,
        "full-text (BM25)": fulltext,
        "  query embedding alone": embeddings.embed_query,
        f"  ({describe(other)}: query embedding)": other.embed_query,
        "  Chroma alone (vector given)": lambda q: vector_store.query(fixed[q], 4 * k),
        "hybrid, 2 of 50 sources": lambda q: hybrid(q, source_ids=two),
    }
    times = measure(runs, queries, args.rounds)
    count = vector_store.count()
    bm25.close()

    print(
        f"\n{count} chunks (~200 words each), top_k={k} (hybrid fetches {4 * k} from each), "
        f"{len(queries)} questions x {args.rounds} rounds, query embedding INCLUDED "
        f"({describe(embeddings)})"
    )
    print(f"{'retriever':<40}{'p50 ms':>9}{'p95 ms':>9}")
    for name, values in times.items():
        p50, p95 = percentiles(values)
        print(f"{name:<40}{p50:>9.1f}{p95:>9.1f}")
    p50, p95 = percentiles(times["hybrid (embed + Chroma + BM25 + RRF)"])
    verdict = "met" if p50 <= 50 and p95 <= 100 else "MISSED"
    print(f"goal: hybrid p50 <= 50 ms, p95 <= 100 ms -> {verdict} at {count} chunks")
    for plain, with_prior in (
        ("hybrid (embed + Chroma + BM25 + RRF)", "hybrid + definition prior"),
        ("hybrid, a code name in the question", "hybrid + prior, a code name in it"),
    ):
        ratio = percentiles(times[with_prior])[0] / percentiles(times[plain])[0]
        print(f"p50 ratio {with_prior!r} / {plain!r}: {ratio:.2f}")
    for name, seconds in build.items():
        print(f"{name:<40}{seconds:>9.2f} s")


def describe(embeddings: Embeddings) -> str:
    backend = getattr(embeddings, "backend", "?")
    precision = getattr(embeddings, "precision", "?")
    return f"{backend} backend, {precision}" if backend == "torch" else f"{backend} backend"


if __name__ == "__main__":
    main()
