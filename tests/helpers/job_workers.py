"""``ragloom worker`` processes on a shared setup (PostgreSQL, ``chroma run``, one data
folder), and the app that submits their jobs, for the tests and benchmarks of the
procrastinate queue."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragloom_app.app import BaseApp
from ragloom_app.jobs import JobView
from tests.helpers.cli import PROJECT

__all__ = ["HASH_EMBEDDINGS", "WorkerSetup", "wait_finished", "worker_setup"]

HASH_EMBEDDINGS = {"hash": {"class": "ragloom_app.testing.HashEmbeddings"}}
"""Fast stand-in embeddings for tests of the queue's control flow."""


@dataclass
class WorkerSetup:
    """Where the workers run: settings file, data folder, servers; the workers started."""

    folder: Path
    settings: Path
    data_dir: Path
    database_url: str
    chroma_url: str
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        """The environment of a process of this setup."""
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
        return {
            **inherited,
            "PYTHONPATH": os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")]),
            "PYTHONUNBUFFERED": "1",  # the log shows what was printed at once
            "RAGLOOM_SETTINGS": str(self.settings),
            "RAGLOOM_DATA_DIR": str(self.data_dir),
            "RAGLOOM_DATABASE_URL": self.database_url,
            "RAGLOOM_CHROMA_SERVER": self.chroma_url,
        }

    def start_worker(self, concurrency: int = 1) -> subprocess.Popen[bytes]:
        """One more ``ragloom worker`` (its log in the folder, named by its pid)."""
        command = [sys.executable, "-m", "ragloom_app.cli", "worker"]
        command += ["--concurrency", str(concurrency)]
        log = (self.folder / f"worker-{len(self.workers)}.log").open("wb")
        process = subprocess.Popen(
            command, env=self.env(), stdout=log, stderr=subprocess.STDOUT, cwd=self.folder
        )
        self.workers.append(process)
        return process

    def wait_ready(self, timeout: float = 180) -> None:
        """Wait until every worker started says it takes jobs."""
        deadline = time.monotonic() + timeout
        logs = [self.folder / f"worker-{n}.log" for n in range(len(self.workers))]
        while not all("running indexing jobs" in p.read_text(errors="replace") for p in logs):
            assert all(w.poll() is None for w in self.workers), self.logs()
            assert time.monotonic() < deadline, self.logs()
            time.sleep(0.1)

    def logs(self, tail: int | None = 3000) -> str:
        """What every worker printed: the last ``tail`` characters of each log (enough for
        a failing assertion), or all of it (``None``), to look for a line."""
        return "\n".join(
            p.read_text(errors="replace")[-tail if tail else 0 :]
            for p in sorted(self.folder.glob("worker-*.log"))
        )

    def stop(self) -> None:
        """Stop every worker still running (SIGTERM, then SIGKILL)."""
        for process in self.workers:
            if process.poll() is None:
                process.terminate()
        for process in self.workers:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def worker_setup(
    folder: Path,
    database_url: str,
    chroma_url: str,
    *,
    stall: float = 3.0,
    embeddings: dict[str, dict[str, Any]] | None = None,
) -> Iterator[WorkerSetup]:
    """A setup in ``folder`` (``embeddings``: the workers' EMBEDDINGS, the first the
    default; :data:`HASH_EMBEDDINGS` if not given); its workers are stopped at the end."""
    chosen = embeddings or HASH_EMBEDDINGS
    settings = folder / "settings.py"
    settings.write_text(
        f"EMBEDDINGS = {chosen!r}\n"
        f"DEFAULT_EMBEDDING = {next(iter(chosen))!r}\n"
        "FIRST_RUN_DOCS = None\n"
        'JOB_QUEUE = "procrastinate"\n'
        f"JOB_STALL_SECONDS = {stall!r}\n",
        encoding="utf-8",
    )
    setup = WorkerSetup(folder, settings, folder / "data", database_url, chroma_url)
    try:
        yield setup
    finally:
        setup.stop()


def wait_finished(
    app: BaseApp, jobs: list[JobView], setup: WorkerSetup, timeout: float = 180
) -> list[JobView]:
    """The jobs once each is finished (an assertion with the workers' logs past ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        seen = [app.jobs.store.get(job.id) or job for job in jobs]
        if all(job.finished for job in seen):
            return seen
        assert time.monotonic() < deadline, (seen, setup.logs())
        time.sleep(0.1)
