"""Full text in PostgreSQL against the embedded BM25 file: recall, CJK, latency, in one run.

A throwaway PostgreSQL cluster is started on loopback (Debian's ``postgresql``; see
``scripts/ensure-postgres``), and the same chunks go into both stores:

- **recall@k on the State of the Union set**: the speech split as a file index splits it
  (240 tokens, overlap 36), the 74 questions, relevance as ``retrieval_quality.py`` derives
  it from the gold answers; plus how many questions get the same top 10 from both;
- **CJK**: the Chinese articles of ``../shared/seeds`` split the same way; each chunk is
  looked for by 12 characters from its middle (known-item search), recall@1 and @5;
- **query latency**, p50/p95 over the 74 questions (``--rounds`` times, interleaved), on
  the speech and on ``--scale`` synthetic chunks (``retrieval_latency.py``'s corpus),
  through a connection pool as the app uses it; the ratio is PostgreSQL's over the file's.

    .venv/bin/python benchmarks/fulltext_postgres.py [--scale 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import csv
import logging
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from _common import REPO, configured_embeddings
from retrieval_latency import build_chunks
from retrieval_quality import DEFAULT_DATA, KS, PREFIX, recall, relevant_ids
from sqlalchemy import create_engine

from ragloom.schema import Chunk, Page
from ragloom.splitters import TokenSplitter
from ragloom.stores import BM25Store, FullTextStore, PostgresFullTextStore
from ragloom_app.db.engine import driver_connections

sys.path.insert(0, str(REPO))
from tests.helpers.postgres import fresh_database, throwaway_postgres

SEEDS = REPO.parent / "shared" / "seeds"
BATCH = 5000


def split(text: str, count_tokens: Callable[[str], int], source: str) -> list[Chunk]:
    splitter = TokenSplitter(chunk_size=240, chunk_overlap=36, tokenizer=count_tokens)
    return splitter([Page(text, number=1)], source_id=source, source_name=f"{source}.txt")


def fill(stores: Sequence[FullTextStore], chunks: list[Chunk]) -> list[float]:
    """Add ``chunks`` to each store in batches; the seconds each took."""
    took = []
    for store in stores:
        started = time.perf_counter()
        for first in range(0, len(chunks), BATCH):
            store.add(chunks[first : first + BATCH])
        store.ensure_index()
        took.append(time.perf_counter() - started)
    return took


def ranked(store: FullTextStore, query: str, k: int) -> list[str]:
    return [chunk.id for chunk, _ in store.query(query, k)]


def latencies(
    stores: Sequence[FullTextStore], queries: list[str], rounds: int
) -> list[tuple[float, float]]:
    """p50 and p95 in ms of each store's ``query(q, 10)``, interleaved."""
    for query in queries[:5]:
        for store in stores:
            store.query(query, 10)
    times: list[list[float]] = [[] for _ in stores]
    rng = random.Random(0)
    for _ in range(rounds):
        for query in queries:
            order = list(range(len(stores)))
            rng.shuffle(order)
            for i in order:
                started = time.perf_counter()
                stores[i].query(query, 10)
                times[i].append(time.perf_counter() - started)
    return [(float(np.percentile(t, 50) * 1000), float(np.percentile(t, 95) * 1000)) for t in times]


def known_items(chunks: list[Chunk]) -> list[tuple[str, str]]:
    """(chunk id, 12 characters from its middle) for chunks with enough CJK text."""
    items = []
    for chunk in chunks:
        text = re.sub(r"\s+", "", chunk.text)
        if len(text) >= 40:
            middle = len(text) // 2
            items.append((chunk.id, text[middle - 6 : middle + 6]))
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the sotu data folder")
    parser.add_argument("--scale", type=int, default=100_000, help="synthetic chunks; 0: none")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    text = (args.data / "state_of_the_union.txt").read_text(encoding="utf-8")
    with (args.data / "sotu_qa.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    questions = [PREFIX.sub("", r["question"]) for r in rows]
    count_tokens = configured_embeddings(None).count_tokens
    speech = split(text, count_tokens, "sotu")
    seeds = [
        chunk
        for path in sorted(SEEDS.glob("*.txt"))
        for chunk in split(path.read_text(encoding="utf-8"), count_tokens, path.stem)
    ]

    with throwaway_postgres() as server, tempfile.TemporaryDirectory() as tmp:
        url = fresh_database(server)
        engine = create_engine(url, pool_pre_ping=True)  # as the app makes it
        connect = driver_connections(engine)

        def pair(name: str) -> tuple[BM25Store, PostgresFullTextStore]:
            return BM25Store(Path(tmp) / name), PostgresFullTextStore(connect, name)

        with engine.connect() as conn:
            version = conn.exec_driver_sql("SHOW server_version").scalar()
        print(f"Full text: a BM25 file against PostgreSQL {version}, the same tokenizer")
        stores = pair("sotu")
        fill(stores, speech)
        relevant = relevant_ids(speech, [r["answer"] for r in rows])
        kept = [i for i, gold in enumerate(relevant) if gold]
        picked, gold = [questions[i] for i in kept], [relevant[i] for i in kept]
        print(
            f"\nState of the Union: {len(speech)} chunks, "
            f"{len(kept)} of {len(rows)} questions with a relevant chunk"
        )
        print("  store        " + "  ".join(f"@{k:<5}" for k in KS))
        for name, store in zip(("BM25 file", "PostgreSQL"), stores, strict=True):
            cells = [recall([ranked(store, q, k) for q in picked], gold, k) for k in KS]
            print(f"  {name:<12} " + "  ".join(f"{c:5.1f}%" for c in cells))
        same = sum(ranked(stores[0], q, 10) == ranked(stores[1], q, 10) for q in questions)
        print(f"  the same top 10 for {same} of {len(questions)} questions")
        speech_latency = latencies(stores, questions, args.rounds)

        cjk = pair("cjk")
        fill(cjk, seeds)
        items = known_items(seeds)
        print(f"\nCJK (the Chinese seed articles): {len(seeds)} chunks, {len(items)} looked for")
        for name, store in zip(("BM25 file", "PostgreSQL"), cjk, strict=True):
            hits = [ranked(store, query, 5) for _, query in items]
            at1 = 100 * np.mean([h[:1] == [cid] for h, (cid, _) in zip(hits, items, strict=True)])
            at5 = 100 * np.mean([cid in h for h, (cid, _) in zip(hits, items, strict=True)])
            print(f"  {name:<12} recall@1 {at1:5.1f}%  recall@5 {at5:5.1f}%")

        print(f"\nquery latency, ms (k = 10, {len(questions)} questions x {args.rounds} rounds)")
        print(
            "  corpus           chunks   file p50/p95     PostgreSQL p50/p95"
            "  ratio p50/p95  add s (file/PG)"
        )
        sizes: list[tuple[str, int, list[tuple[float, float]], list[float]]] = [
            ("speech", len(speech), speech_latency, [])
        ]
        if args.scale:
            synthetic = build_chunks(text, args.scale, seed=0)
            scaled = pair(f"synthetic_{args.scale}")
            took = fill(scaled, synthetic)
            sizes.append(
                ("synthetic", len(synthetic), latencies(scaled, questions, args.rounds), took)
            )
        for corpus, n, ((f50, f95), (p50, p95)), took in sizes:
            added = f"{took[0]:.0f} / {took[1]:.0f}" if took else ""
            print(
                f"  {corpus:<14} {n:>8}   {f50:6.1f} / {f95:6.1f}   {p50:6.1f} / {p95:6.1f}"
                f"      {p50 / f50:5.2f} / {p95 / f95:5.2f}   {added}"
            )
        engine.dispose()


if __name__ == "__main__":
    main()
