"""A file that kills its worker stops it at most MAX_INDEXING_ATTEMPTS times, however the
retries come: a job run again after its worker died, the start-up recovery of the worker
processes between two runs, or both. Real processes (each a worker start as ``ragloom
worker`` makes it: the indices' recovery, a sweep, then the job), SIGKILLed by the
embeddings of tests/helpers/crashing_embeddings.py; real SQLite, Chroma and BM25.

Before the fix each run of the job began the file afresh, counting 1, and each recovery
after it tried it once more: the file killed 6 workers, not 2."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlmodel import Session, select

from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus, Source
from ragloom_app.index.file.recovery import GAVE_UP_REASON, MAX_INDEXING_ATTEMPTS
from ragloom_app.jobs.runner import JobRunner
from ragloom_app.jobs.store import JobStore
from ragloom_app.plugins.manager import create_plugin_manager
from ragloom_app.settings import AppSettings
from tests.helpers.cli import PROJECT
from tests.helpers.crashing_embeddings import MARKER
from tests.helpers.jobs import staged_job, stalled

STALL_SECONDS = 1.0

# One worker start: the app as in make_app below, then what `ragloom worker` does first.
WORKER = """
import sys
from pathlib import Path
from tests.app.jobs.test_job_crashes import make_app
from ragloom_app.jobs.queues import JobSweeper
from ragloom_app.jobs.runner import JobRunner, worker_name
from ragloom_app.jobs.store import JobStore

app = make_app(Path(sys.argv[1]))
if sys.argv[3] == "recover":
    app.recover_indices()
JobSweeper(JobStore(app.engine), app.settings.job_stall_seconds, lambda job_id: None).sweep()
JobRunner(app, worker_name("worker")).run(sys.argv[2])
"""


def make_app(root: Path) -> BaseApp:
    """The app of ``root``: SQLite, the crashing embeddings, a 1 s stall time."""
    values = AppSettings(
        data_dir=root / "data",
        database_url=f"sqlite:///{root / 'app.db'}",
        llms={"replay": {"class": "ragloom.llms.replay.ReplayLLM", "replies": ["x"]}},
        default_llm="replay",
        embeddings={
            "crashing": {
                "class": "tests.helpers.crashing_embeddings.CrashingEmbeddings",
                "calls_file": str(root / "calls.jsonl"),
            }
        },
        default_embedding="crashing",
        job_stall_seconds=STALL_SECONDS,
    )
    values.first_run_docs = None
    return BaseApp(values, plugin_manager=create_plugin_manager()).start()


@pytest.mark.parametrize("recovery", ["recover", "no-recovery"])
def test_a_file_that_kills_its_worker_kills_it_at_most_twice(tmp_path: Path, recovery: str) -> None:
    app = make_app(tmp_path)
    docs = tmp_path / "in"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nThe harbour pumps move water at night.\n")
    (docs / "bad.md").write_text(f"# Bad\n\nThis page looks harmless. {MARKER}\n")
    files = [("good.md", docs / "good.md"), ("bad.md", docs / "bad.md")]
    job_id = staged_job(app, files, "crash" * 6)
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    path = os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")])
    env = {**inherited, "PYTHONPATH": path}
    killed = 0
    store = JobStore(app.engine)
    for _ in range(8):  # the job ends within MAX_INDEXING_ATTEMPTS + 1 starts
        command = [sys.executable, "-c", WORKER, str(tmp_path), job_id, recovery]
        started = subprocess.run(command, env=env, cwd=PROJECT, capture_output=True, timeout=120)
        assert started.returncode in (0, -9), started.stderr.decode()[-2000:]
        killed += started.returncode == -9
        job = store.get(job_id)
        assert job is not None
        if job.finished:
            break
        time.sleep(STALL_SECONDS * 1.3)  # the killed worker's heartbeat goes stale
    assert killed == MAX_INDEXING_ATTEMPTS
    assert job.status == JobStatus.DONE, job.error
    outcomes = {o["file"]: (o["status"], o["reason"]) for o in job.outcomes}
    assert outcomes["bad.md"] == ("failed", GAVE_UP_REASON)
    assert outcomes["good.md"][0] in ("indexed", "skipped")  # skipped: a recovery indexed it
    with Session(app.engine) as session:
        sources = {s.name: (s.status, s.attempts) for s in session.exec(select(Source))}
    assert sources["bad.md"] == ("failed", MAX_INDEXING_ATTEMPTS)
    assert sources["good.md"][0] == "indexed"


def test_a_content_given_up_before_the_job_is_tried_afresh_when_it_resumes(
    tmp_path: Path,
) -> None:
    """A job resumed after its worker died carries the attempts of its own runs only: it
    once also carried those of an earlier upload given up long ago, and failed the file
    the user had added again to have it tried afresh (as the give-up's reason says)."""
    app = make_app(tmp_path)
    content = b"# Retry\n\nThe pumps were mended; this file indexes now.\n"
    index = app.indices.get("My files")
    with Session(app.engine) as session:  # as an earlier job left the file it gave up on
        session.add(
            Source(
                id="given-up-before",
                index_id=index.id,
                name="retry.md",
                sha256=hashlib.sha256(content).hexdigest(),
                status="failed",
                reason=GAVE_UP_REASON,
                attempts=MAX_INDEXING_ATTEMPTS,
            )
        )
        session.commit()
    (tmp_path / "retry.md").write_bytes(content)
    job_id = staged_job(app, [("retry.md", tmp_path / "retry.md")], "afresh" * 5)
    stalled(app, job_id, "a-worker-that-died")  # on any file, or a laptop asleep
    assert JobRunner(app, "this-worker").run(job_id) == JobStatus.DONE
    job = JobStore(app.engine).get(job_id)
    assert job is not None and [(o["file"], o["status"]) for o in job.outcomes] == [
        ("retry.md", "indexed")
    ]
