"""SIGTERM (or Ctrl-C) of a real ``ragloom serve`` while it indexes: the job it was running
goes back to the queue, its claim not counted, and the next start finishes it. The server
once closed only its web server: the job was left ``running`` and counted as its worker's
death at the next start, so three restarts during one job failed it."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.jobs.runner import MAX_JOB_ATTEMPTS
from ragloom_app.jobs.store import JobStore
from ragloom_app.settings import AppSettings
from tests.helpers.cli import cli_env
from tests.helpers.jobs import numbered_documents, staged_job
from tests.helpers.serve_process import serve_process

SETTINGS = """
EMBEDDINGS = {"slow": {"class": "tests.helpers.slow_embeddings.SlowEmbeddings", "delay": 1.0}}
DEFAULT_EMBEDDING = "slow"
LLMS = {"replay": {"class": "ragloom.llms.replay.ReplayLLM", "replies": ["x"]}}
DEFAULT_LLM = "replay"
FIRST_RUN_DOCS = None
"""


def test_sigterm_of_ragloom_serve_hands_its_running_job_back(tmp_path: Path) -> None:
    settings = tmp_path / "settings.py"
    settings.write_text(SETTINGS, encoding="utf-8")
    env = cli_env(tmp_path / "data", settings)
    values = AppSettings.load(settings)
    values.data_dir = tmp_path / "data"
    app = BaseApp(values).start()
    job_id = staged_job(app, numbered_documents(tmp_path / "in", 8), "stopped" * 4)
    store = JobStore(app.engine)
    for start in range(MAX_JOB_ATTEMPTS + 1):  # as many stops as used to fail the job
        log = tmp_path / f"serve{start}.log"
        with serve_process(env, log, cwd=tmp_path) as (_, process):
            deadline = time.monotonic() + 60
            while (job := store.get(job_id)) is not None and job.status == JobStatus.QUEUED:
                assert time.monotonic() < deadline, log.read_text()[-2000:]
                time.sleep(0.05)
            assert job is not None
            if job.finished:
                break
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0, log.read_text()[-2000:]
        stopped = store.get(job_id)
        assert stopped is not None
        if not stopped.finished:
            assert (stopped.status, stopped.attempts, stopped.worker) == (
                JobStatus.QUEUED,
                0,
                None,
            ), log.read_text()[-2000:]
    with serve_process(env, tmp_path / "last.log", cwd=tmp_path):
        deadline = time.monotonic() + 120
        while not (job := store.get(job_id)) or not job.finished:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    assert job.status == JobStatus.DONE and job.attempts == 1, job.error
