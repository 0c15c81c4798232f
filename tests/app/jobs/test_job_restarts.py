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
from ragloom_app.jobs.runner import MAX_JOB_ATTEMPTS, JobRunner
from ragloom_app.jobs.store import JobStore, JobView
from tests.helpers.jobs import backdate, finished_job, numbered_documents, staged_job


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


def _threads_ended(prefix: str, besides: set[threading.Thread]) -> None:
    """Wait for the ``prefix`` threads started since ``besides`` was taken (this test's,
    not those another test of the process may have left)."""
    for thread in threading.enumerate():
        if thread.name.startswith(prefix) and thread not in besides:
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
    before = set(threading.enumerate())
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
        # Queued shows no progress: its next claim runs it from the start.
        assert (stopped.files_done, stopped.outcomes) == (0, [])
        # The process would end here, and a thread still in its file with it: waited for.
        _threads_ended("ragloom-job-worker", before)
        app.jobs.start()  # the next start of the app takes the job up
    done = finished_job(app, job.id, timeout=120)
    assert done.status == JobStatus.DONE and done.attempts == 1, done.error
    assert sorted(s["name"] for s in index.list_sources()) == [name for name, _ in files], (
        done.outcomes
    )
    assert index.check().clean


def test_a_claim_made_again_by_another_thread_is_still_handed_back(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose claim was taken back (its heartbeat went stale: a laptop's sleep) and
    made again by another thread of the same runner once forgot the new claim as it
    ended, so a stop left that job running, to be counted as a dead worker."""
    _slow_files(monkeypatch, 1.0)
    # 20 files of 1 s: the second run is still at work when the first has ended.
    job_id = staged_job(app, numbered_documents(tmp_path / "in", 20), "reclaimed" * 3)
    runner, store = JobRunner(app, "this-process"), JobStore(app.engine)
    first = threading.Thread(target=runner.run, args=(job_id,))
    first.start()
    _running(app, job_id)
    deadline = time.monotonic() + 30
    backdate(app, job_id, "heartbeat_at")
    while not store.requeue_stalled(job_id, 1.0):  # a heartbeat may land in between
        assert time.monotonic() < deadline
        backdate(app, job_id, "heartbeat_at")
    # The second run is held just after its claim, where a stop once missed it.
    claimed_again, go_on = threading.Event(), threading.Event()
    read_row = runner.store.row

    def row_held_once_claimed(job: str) -> Any:
        if threading.current_thread() is second and not claimed_again.is_set():
            claimed_again.set()
            go_on.wait(timeout=30)
        return read_row(job)

    monkeypatch.setattr(runner.store, "row", row_held_once_claimed)
    second = threading.Thread(target=runner.run, args=(job_id,))
    second.start()
    assert claimed_again.wait(timeout=30)
    first.join(timeout=30)  # its next write finds its claim gone: it ends
    assert not first.is_alive()
    runner.handing_back.set()
    try:
        assert runner.hand_back_running() == [job_id]
    finally:
        go_on.set()
    second.join(timeout=30)
    handed = store.get(job_id)
    assert handed is not None and (handed.status, handed.worker) == (JobStatus.QUEUED, None)
