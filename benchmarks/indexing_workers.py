"""Indexing throughput with 1, 2 and 4 ``ragloom worker`` processes on the server setup.

The setup is the one docs/deploy.md describes: a throwaway PostgreSQL cluster on loopback
(the app database, the full text and procrastinate's job queue), a ``chroma run`` for the
vectors, and the workers sharing one data folder, each with the bundled embedding model.
An app process submits the pages of SQLite's documentation (a sample of
``/usr/share/doc/sqlite3``, Debian's ``sqlite3-doc``) as several jobs and the clock runs
from the first submit to the last job done, once each worker has run a job of one other
page (a worker's first job pays for starting its readers sandbox, about a second once).
The baseline is the raw speed of the same embedding model in this process over the very
chunk texts the pipeline makes, measured before and after the workers run (the machine is
shared and noisy): on 2 cores the embedding is the limit, so the ratio says what the
queue, the stores and the workers' competition for the cores cost. Each worker count
gets a fresh database and Chroma server.

    .venv/bin/python benchmarks/indexing_workers.py [--pages 48] [--jobs 8] [--workers 1,2,4]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO

sys.path.insert(0, str(REPO))
from tests.helpers.chroma_server import chroma_server
from tests.helpers.job_workers import wait_finished, worker_setup
from tests.helpers.postgres import fresh_database, throwaway_postgres

DOCS = Path("/usr/share/doc/sqlite3")


def sample_pages(root: Path, count: int) -> list[Path]:
    """``count`` pages spread evenly over the sorted list of every page."""
    pages = sorted(root.rglob("*.html"))
    if not pages:
        raise SystemExit(f"no HTML pages under {root}: apt-get install sqlite3-doc")
    step = max(len(pages) // count, 1)
    return pages[::step][:count]


def raw_rate(texts: list[str]) -> float:
    """Chunks/s of the bundled embedding model over ``texts``, in this process."""
    from _common import configured_embeddings

    embeddings = configured_embeddings(None)
    embeddings.embed_documents(["warm up"] * 8)
    started = time.perf_counter()
    embeddings.embed_documents(texts)
    return len(texts) / (time.perf_counter() - started)


def chunk_texts(pages: list[Path]) -> list[str]:
    """The chunks the pipeline makes of ``pages`` (its reader and splitter)."""
    from ragloom.loaders import read_file
    from ragloom_app.app import BaseApp
    from ragloom_app.settings import AppSettings

    with tempfile.TemporaryDirectory() as folder:
        settings = AppSettings.load(REPO / "flowsettings.py")
        settings.data_dir, settings.first_run_docs = Path(folder), None
        app = BaseApp(settings).start()
        splitter = app.indices.indices[0].get_indexing_pipeline({}).ingestor.splitter
        return [c.text for p in pages for c in splitter(read_file(p), "s", p.name)]


def run_workers(
    server: object, pages: list[Path], spare: list[Path], jobs: int, workers: int, root: Path
) -> float:
    """Chunks/s of ``workers`` workers indexing ``pages`` submitted as ``jobs`` jobs, once
    each worker has run a job of one of the ``spare`` pages (a worker's first job also
    starts its readers sandbox and the model's first runs: about a second, once)."""
    from ragloom_app.app import BaseApp
    from ragloom_app.settings import AppSettings

    settings = AppSettings.load(REPO / "flowsettings.py")
    embeddings = {settings.default_embedding: settings.embeddings[settings.default_embedding]}
    url = fresh_database(server)  # type: ignore[arg-type]
    folder = root / f"workers-{workers}"
    folder.mkdir()
    with (
        chroma_server() as chroma,
        worker_setup(folder, url, chroma.url, stall=30.0, embeddings=embeddings) as setup,
    ):
        settings.data_dir, settings.first_run_docs = setup.data_dir, None
        settings.database_url, settings.chroma_server = url, chroma.url
        settings.job_queue = "procrastinate"
        app = BaseApp(settings).start()
        for _ in range(workers):
            setup.start_worker()
        setup.wait_ready()
        index = app.indices.indices[0]
        warm_ups = [
            app.jobs.submit_files(index, "local", [(page.name, page)], move=False)
            for page in spare[:workers]
        ]
        warmed = {job.worker for job in wait_finished(app, warm_ups, setup, timeout=600)}
        batches = [pages[n::jobs] for n in range(jobs)]
        started = time.perf_counter()
        submitted = [
            app.jobs.submit_files(index, "local", [(p.name, p) for p in batch], move=False)
            for batch in batches
            if batch
        ]
        done = wait_finished(app, submitted, setup, timeout=3600)
        elapsed = time.perf_counter() - started
        outcomes = [o for job in done for o in job.outcomes]
        bad = [o for o in outcomes if o["status"] != "indexed"]
        assert not bad, bad[:3]
        chunks = sum(o["chunks"] for o in outcomes)
        used = len({job.worker for job in done})
        print(
            f"  {workers} worker{'s' if workers > 1 else ' '}  {elapsed:8.1f} s  "
            f"{chunks / elapsed:8.1f} chunks/s  ({chunks} chunks, {len(done)} jobs, "
            f"run by {used} workers, {len(warmed)} warmed up first)",
            flush=True,
        )
        app.jobs.close()
        return chunks / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, default=DOCS, help="the HTML root")
    parser.add_argument("--pages", type=int, default=48, help="pages of the sample")
    parser.add_argument("--jobs", type=int, default=8, help="jobs the pages are submitted as")
    parser.add_argument("--workers", default="1,2,4", help="worker counts, comma-separated")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    counts = [int(n) for n in args.workers.split(",")]
    pages = sample_pages(args.docs, args.pages)
    sampled = {p.read_bytes() for p in pages}  # a copy of a sampled page would be skipped
    spare = [p for p in sorted(args.docs.rglob("*.html")) if p.read_bytes() not in sampled]
    texts = chunk_texts(pages)
    print(
        f"Indexing with ragloom worker processes (procrastinate on PostgreSQL, chroma run): "
        f"{len(pages)} pages of {args.docs}, {len(texts)} chunks, as {args.jobs} jobs"
    )
    before = raw_rate(texts)
    print(f"  raw embedding, before   {before:8.1f} chunks/s", flush=True)
    rates: dict[int, float] = {}
    with throwaway_postgres() as server, tempfile.TemporaryDirectory() as tmp:
        for workers in counts:
            rates[workers] = run_workers(server, pages, spare, args.jobs, workers, Path(tmp))
    after = raw_rate(texts)
    raw = statistics.mean([before, after])
    print(f"  raw embedding, after    {after:8.1f} chunks/s (baseline: the mean, {raw:.1f})")
    for workers, rate in rates.items():
        shown = f"{workers} worker{'s' if workers > 1 else ' '}"
        print(f"  {shown}: {rate / raw:6.3f} of raw embedding")


if __name__ == "__main__":
    main()
