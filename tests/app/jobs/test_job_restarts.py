"""A graceful stop of the app (Ctrl-C of ``ragloom serve``: its job queue closed) is no
dead worker: the job it runs goes back to the queue, its claim not counted, and the next
start runs it. Before, the job was left ``running`` and counted as its worker's death at
the next start: three restarts during one job failed it ("its worker stopped 3 times")."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ragloom.indexing import FileIngestor
from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.jobs import queues
from ragloom_app.jobs.runner import MAX_JOB_ATTEMPTS
from ragloom_app.jobs.store import JobStore, JobView
from tests.helpers.jobs import finished_job, numbered_documents


def _slow_files(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Each file takes ``seconds`` to read: a job is still running when the app stops."""
    chunk = FileIngestor.chunk

    def slow(self: FileIngestor, *args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return chunk(self, *args, **kwargs)

    monkeypatch.setattr(FileIngestor, "chunk", slow)


def _running(app: BaseApp, job_id: str) -> JobView:
    deadline = time.monotonic() + 30
    while (job := JobStore(app.engine).get(job_id)) is None or job.status != JobStatus.RUNNING:
        assert time.monotonic() < deadline, job
        time.sleep(0.02)
    return job


def _threads_ended(prefix: str) -> None:
    for thread in threading.enumerate():
        if thread.name.startswith(prefix):
            thread.join(timeout=30)
            assert not thread.is_alive(), thread


@pytest.mark.parametrize("file_seconds", [0.1, 2.0], ids=["between-files", "mid-file"])
def test_restarts_of_the_app_during_a_job_hand_it_back_uncounted(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file_seconds: float
) -> None:
    """The job is handed back at its next event (a file begun or done), or, if none comes
    within HAND_BACK_WAIT_SECONDS, at once (the process is about to end)."""
    _slow_files(monkeypatch, file_seconds)
    monkeypatch.setattr(queues, "HAND_BACK_WAIT_SECONDS", 0.5, raising=False)
    index = app.indices.get("My files")
    files = numbered_documents(tmp_path / "in", 4)
    job = app.jobs.submit_files(index, "local", files, move=False)
    for _ in range(MAX_JOB_ATTEMPTS + 1):  # as many as used to fail the job
        _running(app, job.id)
        time.sleep(0.3)
        started = time.monotonic()
        app.jobs.close()
        assert time.monotonic() - started < 5
        stopped = JobStore(app.engine).get(job.id)
        assert stopped is not None
        assert (stopped.status, stopped.attempts, stopped.worker) == (JobStatus.QUEUED, 0, None)
        # The process would end here, and a thread still in its file with it: waited for.
        _threads_ended("ragloom-job-worker")
        app.jobs.start()  # the next start of the app takes the job up
    done = finished_job(app, job.id, timeout=120)
    assert done.status == JobStatus.DONE and done.attempts == 1, done.error
    assert sorted(s["name"] for s in index.list_sources()) == [name for name, _ in files], (
        done.outcomes
    )
    assert index.check().clean
