"""Indexing throughput: chunks/s through the whole file pipeline against raw embedding.

The pipeline (``FileIndex.get_indexing_pipeline``) hashes and copies each file, reads it,
splits it, embeds the chunks and writes Chroma, the BM25 store and the app database, then
builds the BM25 index. The baseline embeds the very same chunk texts with the same
embedding object (same backend, batch size and sorting) and nothing else. Each round
indexes new copies of the State of the Union speech (a distinct header per copy, so none is
skipped as a duplicate) into the same index, and runs the baseline just before or just
after (alternating): the machine is shared and noisy, so the ratio reported is the median
of the per-round ratios. Goal: ratio >= 0.9, i.e. the embedding model is the only real cost.

With ``--docs`` each round instead indexes its own ``--pages`` HTML pages of SQLite's
manual (Debian's ``sqlite3-doc``, the documentation set of ``../shared/data/sqlite-docs``):
many small files, 6 to 7 chunks a page, where the per-file costs show.

A second table splits the pipeline's time by stage (timers around the stage functions;
reading and splitting run in the readers sandbox, timed as the app waits for them).

    .venv/bin/python benchmarks/indexing_throughput.py [--rounds 5] [--copies 3] [--backend onnx]
    .venv/bin/python benchmarks/indexing_throughput.py --preload 100000 --rounds 3 --copies 1
    .venv/bin/python benchmarks/indexing_throughput.py --docs /usr/share/doc/sqlite3 --pages 60
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import logging
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "sotu"


def write_copies(text: str, folder: Path, round_no: int, copies: int) -> list[Path]:
    files = []
    for n in range(copies):
        path = folder / f"speech-{round_no}-{n}.txt"
        path.write_text(f"Round {round_no}, copy {n} of the address.\n\n{text}", encoding="utf-8")
        files.append(path)
    return files


def docs_pages(root: Path, rounds: int, per_round: int) -> list[list[Path]]:
    """``rounds`` disjoint lists of ``per_round`` pages, spread over the whole manual.

    A page whose content another page has already (the manual holds a few) is left out:
    the pipeline would skip it as a duplicate.
    """
    from ragloom_app.index.file.pipeline import sha256_of  # the pipeline's own duplicate test

    seen: set[str] = set()
    pages = []
    for page in sorted(root.rglob("*.html")):
        digest = sha256_of(page)
        if digest not in seen:
            seen.add(digest)
            pages.append(page)
    wanted = rounds * per_round
    if len(pages) < wanted:
        raise SystemExit(f"{len(pages)} HTML pages under {root}, {wanted} wanted")
    step = len(pages) // wanted
    picked = pages[::step][:wanted]
    # Round r takes every rounds-th page from r: each round spans the whole manual.
    return [picked[r::rounds] for r in range(rounds)]


@contextlib.contextmanager
def stage_timers(targets: dict[str, tuple[Any, str]]) -> Iterator[dict[str, float]]:
    """Wrap ``owner.attr`` of each target with a timer; yields seconds spent per stage."""
    spent: dict[str, float] = defaultdict(float)
    saved = []
    for stage, (owner, attr) in targets.items():
        original = getattr(owner, attr)
        saved.append((owner, attr, original))

        def timed(*args: Any, _f: Callable[..., Any] = original, _s: str = stage, **kw: Any) -> Any:
            started = time.perf_counter()
            try:
                return _f(*args, **kw)
            finally:
                spent[_s] += time.perf_counter() - started

        setattr(owner, attr, functools.wraps(original)(timed))
    try:
        yield spent
    finally:
        for owner, attr, original in saved:
            setattr(owner, attr, original)


def preload(index: Any, text: str, count: int) -> None:
    """Fill the index's stores with ``count`` synthetic chunks (random vectors), untimed.

    Written to the stores directly, not the database: the rounds then pay what a real
    index of that size costs them (the BM25 index is rebuilt over every chunk it holds).
    """
    import numpy as np
    from retrieval_latency import DIM, build_chunks  # a sibling script: same corpus recipe

    print(f"preloading {count} synthetic chunks ...", file=sys.stderr, flush=True)
    chunks = build_chunks(text, count, seed=count)
    vectors = np.random.default_rng(count).standard_normal((count, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for first in range(0, count, 5000):
        index.vector_store.add(chunks[first : first + 5000], vectors[first : first + 5000])
        index.fulltext_store.add(chunks[first : first + 5000])
    index.fulltext_store.ensure_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the sotu data folder")
    parser.add_argument("--copies", type=int, default=3, help="copies of the speech per round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved repetitions")
    parser.add_argument(
        "--preload",
        type=int,
        default=0,
        help="synthetic chunks put in the index's stores first (an index that is not new)",
    )
    parser.add_argument(
        "--backend", choices=["torch", "onnx"], help="override the flowsettings backend"
    )
    parser.add_argument(
        "--docs", type=Path, help="index HTML pages of this folder instead of the speech"
    )
    parser.add_argument("--pages", type=int, default=60, help="pages per round with --docs")
    parser.add_argument(
        "--compare-ahead",
        action="store_true",
        help="odd rounds embed each group only once the files before it are stored "
        "(embed_ahead off): the ratio of the two settings, measured in one run",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    import ragloom.indexing
    from ragloom.chunking import warm_readers_sandbox
    from ragloom.embeddings import SentenceTransformerEmbeddings
    from ragloom.loaders import read_file
    from ragloom.stores import BM25Store, ChromaVectorStore
    from ragloom_app.app import BaseApp
    from ragloom_app.settings import AppSettings

    text = (args.data / "state_of_the_union.txt").read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="ragloom-index-bench-") as folder:
        root = Path(folder)
        settings = AppSettings.load(REPO / "flowsettings.py")
        settings.data_dir = root / "data"
        settings.first_run_docs = None
        if args.backend:
            name = settings.default_embedding
            settings.embeddings = {name: {**settings.embeddings[name], "backend": args.backend}}
        app = BaseApp(settings).start()
        embeddings = app.embeddings()
        index = app.indices.indices[0]
        pipeline = index.get_indexing_pipeline({})
        splitter = pipeline.ingestor.splitter
        embeddings.embed_documents(["warm up"] * 4)
        warm_readers_sandbox()  # as the app's server does when it starts
        if args.preload:
            preload(index, text, args.preload)

        stages = {
            "read + split (sandbox)": (ragloom.indexing.FileIngestor, "chunk"),
            "embed": (SentenceTransformerEmbeddings, "embed_documents"),
            "Chroma add": (ChromaVectorStore, "add"),
            "BM25 add": (BM25Store, "add"),
            "BM25 index build": (BM25Store, "ensure_index"),
        }
        raw_rates, pipe_rates, ratios = [], [], []
        ratios_by_ahead: dict[bool, list[float]] = {True: [], False: []}
        totals: dict[str, float] = defaultdict(float)
        pipeline_seconds = 0.0
        chunk_count = 0
        page_rounds = docs_pages(args.docs, args.rounds, args.pages) if args.docs else None
        for round_no in range(args.rounds):
            if page_rounds is not None:
                files = page_rounds[round_no]
            else:
                files = write_copies(text, root, round_no, args.copies)
            # The baseline needs the same chunk texts: split outside any timing.
            texts = [c.text for f in files for c in splitter(read_file(f), "s", f.name)]

            def raw(texts: list[str] = texts) -> float:
                started = time.perf_counter()
                embeddings.embed_documents(texts)
                return len(texts) / (time.perf_counter() - started)

            def through(files: list[Path] = files, texts: list[str] = texts) -> float:
                nonlocal pipeline_seconds
                with stage_timers(stages) as spent:
                    started = time.perf_counter()
                    outcomes = pipeline.run(files)
                    elapsed = time.perf_counter() - started
                assert all(o.status == "indexed" for o in outcomes), outcomes
                chunks = sum(o.chunks for o in outcomes)
                assert chunks == len(texts), (chunks, len(texts))
                for stage, seconds in spent.items():
                    totals[stage] += seconds
                pipeline_seconds += elapsed
                return chunks / elapsed

            pipeline.embed_ahead = not (args.compare_ahead and round_no % 2 == 1)
            if round_no % 2 == 0:
                raw_rate, pipe_rate = raw(), through()
            else:
                pipe_rate, raw_rate = through(), raw()
            raw_rates.append(raw_rate)
            pipe_rates.append(pipe_rate)
            ratios.append(pipe_rate / raw_rate)
            ratios_by_ahead[pipeline.embed_ahead].append(pipe_rate / raw_rate)
            chunk_count += len(texts)
        in_store = index.vector_store.count()

    spec = settings.embeddings[settings.default_embedding]
    what = (
        f"{args.pages} pages of {args.docs}" if args.docs else f"{args.copies} copies of the speech"
    )
    print(
        f"Indexing throughput: {args.rounds} rounds x {what}, "
        f"{chunk_count // args.rounds} chunks per round "
        f"(chunk_size {splitter.chunk_size}, overlap {splitter.chunk_overlap}); "
        f"embedding backend {spec.get('backend', 'torch')}, precision "
        f"{spec.get('precision', 'fp32')}; {in_store} chunks in the index at the end"
        f"{f' ({args.preload} preloaded)' if args.preload else ''}"
    )
    print(f"  raw embed_documents          {statistics.median(raw_rates):8.1f} chunks/s (median)")
    print(f"  through the pipeline         {statistics.median(pipe_rates):8.1f} chunks/s (median)")
    print(
        f"  ratio pipeline / raw         {statistics.median(ratios):8.3f} "
        f"(median of rounds: {', '.join(f'{r:.3f}' for r in ratios)}; goal >= 0.9)"
    )
    if args.compare_ahead:
        on, off = (statistics.median(ratios_by_ahead[k]) for k in (True, False))
        print(
            f"  embed_ahead on  {on:.3f}, off {off:.3f} (medians of their rounds); "
            f"on / off {on / off:.3f}"
        )
    print("  pipeline time by stage (all rounds; stages overlap when embedding ahead):")
    accounted = 0.0
    for stage in stages:
        seconds = totals.get(stage, 0.0)
        accounted += seconds
        print(f"    {stage:<24}{seconds:8.2f} s {100 * seconds / pipeline_seconds:6.1f} %")
    other = pipeline_seconds - accounted
    print(
        f"    {'other (hash, copy, DB)':<24}{other:8.2f} s {100 * other / pipeline_seconds:6.1f} %"
    )


if __name__ == "__main__":
    main()
