"""A run whose claim was taken back stops, and leaves the job to the new claim.

A worker (or a thread of the in-process queue) that stalls past ``JOB_STALL_SECONDS`` (a
machine asleep, a process paused) has its job taken back by a sweeper, and another claim
runs it. Every claim counts one more attempt, so the stale run's writes, made under the
same worker name as likely as not, no longer match and change nothing: it stops at its
next write, and never ends the job or removes the upload the new claim reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus, SourceStatus
from ragloom_app.jobs.runner import JobRunner
from ragloom_app.jobs.staging import staging_dir
from ragloom_app.jobs.store import JobStore
from tests.helpers.jobs import backdate, empty_job, numbered_documents, staged_job

WORKER = "host:1:app"  # the in-process queue's threads share their process's name


def _taken_back(app: BaseApp, job_id: str) -> None:
    """What a sweeper does to a stalled claim, and another thread's claim after it."""
    store = JobStore(app.engine)
    backdate(app, job_id, "heartbeat_at")
    assert store.requeue_stalled(job_id, stall_seconds=1.0)
    assert store.claim(job_id, WORKER, stall_seconds=1.0)


def test_a_claim_is_told_its_attempt_by_the_statement_that_makes_it(app: BaseApp) -> None:
    store = JobStore(app.engine)
    job_id = empty_job(app)
    assert store.claim(job_id, WORKER, stall_seconds=1.0) == 1
    assert store.claim(job_id, WORKER, stall_seconds=30.0) is None  # held, not stalled
    backdate(app, job_id, "heartbeat_at")
    assert store.claim(job_id, WORKER, stall_seconds=1.0) == 2  # a stalled one, taken


def test_an_old_claims_writes_change_nothing(app: BaseApp) -> None:
    store = JobStore(app.engine)
    job_id = empty_job(app)
    assert store.claim(job_id, WORKER, stall_seconds=1.0)
    _taken_back(app, job_id)  # now attempts == 2
    old = {"worker": WORKER, "attempts": 1}
    assert not store.heartbeat(job_id, **old)
    assert not store.progress(job_id, fraction=0.5, current="doc0.md", **old)
    assert not store.finish(job_id, JobStatus.DONE, **old)
    row = store.row(job_id)
    assert row is not None and row.status == JobStatus.RUNNING and row.fraction == 0.0
    new = {"worker": WORKER, "attempts": 2}
    assert store.progress(job_id, fraction=0.5, current="doc0.md", **new)
    assert store.finish(job_id, JobStatus.DONE, **new)


def test_a_run_whose_claim_is_taken_back_stops_and_the_new_claim_indexes_every_file(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = staged_job(app, numbered_documents(tmp_path / "in", 4), "a" * 32)
    progress = JobStore.progress

    def taken_back_after_the_first_file(
        self: JobStore, job: str, *args: Any, **values: Any
    ) -> bool:
        if len(values.get("outcomes") or []) == 1:
            monkeypatch.setattr(JobStore, "progress", progress)
            _taken_back(app, job)
        return progress(self, job, *args, **values)

    monkeypatch.setattr(JobStore, "progress", taken_back_after_the_first_file)
    stale = JobRunner(app, WORKER)
    assert stale.run(job_id) is None  # not this run's to end
    row = JobStore(app.engine).row(job_id)
    assert row is not None and row.status == JobStatus.RUNNING and row.attempts == 2
    assert staging_dir(app.settings.data_dir, job_id).is_dir()  # the new claim reads it
    index = app.indices.get("My files")
    # The file it finished stays; those it held unreported were taken out, not left
    # "being indexed" for the new claim to skip.
    assert [(s["name"], s["status"]) for s in index.list_sources()] == [
        ("doc0.md", SourceStatus.INDEXED)
    ]

    assert JobRunner(app, WORKER)._run_claimed(row) == JobStatus.DONE  # the new claim's run
    done = JobStore(app.engine).get(job_id)
    assert done is not None and done.status == JobStatus.DONE
    assert [(o["file"], o["status"]) for o in done.outcomes] == [
        ("doc0.md", "skipped"),
        ("doc1.md", "indexed"),
        ("doc2.md", "indexed"),
        ("doc3.md", "indexed"),
    ]
    assert index.check().clean
