"""The sweepers take back what dead workers and lost hand-overs leave, on SQLite and
PostgreSQL: a dead worker's job is queued again (cancelled if its owner asked, failed
after MAX_JOB_ATTEMPTS starts), a queued job its queue never got is submitted again once
it waited its stall time, and a sweep that fails is tried again at the next turn."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.jobs.queues import JobSweeper
from ragloom_app.jobs.runner import MAX_JOB_ATTEMPTS, JobRunner
from ragloom_app.jobs.store import JobStore
from tests.helpers.jobs import (
    alter_job,
    backdate,
    empty_job,
    finished_job,
    stalled,
)
from tests.helpers.outages import postgres_away


def test_a_queued_job_its_queue_never_got_is_submitted_by_the_sweeper(
    app: BaseApp, tmp_path: Path
) -> None:
    """The row written, the hand-over to the queue lost (the database went away between
    the two, or before the worker that took the job could claim it): once the job has
    waited ``JOB_STALL_SECONDS``, the sweeper submits it again, and it runs once."""
    app.jobs.start()
    lost_id = empty_job(app)
    done = finished_job(app, lost_id)
    assert done.status == JobStatus.DONE and done.attempts == 1


def test_the_sweeper_submits_only_jobs_that_waited_their_stall_time(app: BaseApp) -> None:
    store = JobStore(app.engine)
    old_id, _new_id = empty_job(app), empty_job(app)
    backdate(app, old_id, "created_at")
    submitted: list[str] = []
    assert JobSweeper(store, 30.0, submitted.append).sweep() == []  # none was running
    assert submitted == [old_id]  # the new one may be waiting its turn in the queue


def _resubmitted_by_a_started_sweeper(sweeper: JobSweeper, resubmitted: list[str]) -> list[str]:
    """What ``sweeper``, started with its first turn at once, resubmits within 5 s."""
    sweeper.start(at_once=True)
    try:
        deadline = time.monotonic() + 5
        while not resubmitted and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        sweeper.stop()
    return resubmitted


def test_a_sweeper_started_at_once_takes_back_a_dead_workers_job_without_a_pause(
    app: BaseApp,
) -> None:
    """``ragloom worker`` starts its sweeper so: its first turn need not wait half of
    JOB_STALL_SECONDS."""
    store, job_id = JobStore(app.engine), empty_job(app)
    assert store.claim(job_id, "killed", stall_seconds=30.0)
    backdate(app, job_id, "heartbeat_at")
    resubmitted: list[str] = []
    sweeper = JobSweeper(store, 30.0, resubmitted.append)
    assert _resubmitted_by_a_started_sweeper(sweeper, resubmitted) == [job_id]


def test_a_sweepers_first_turn_that_fails_is_tried_again_at_the_next(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The database away as ``ragloom worker`` starts: its first sweep used to end it."""
    store, job_id = JobStore(app.engine), empty_job(app)
    stalled(app, job_id, "killed")
    found_stalled, refused = store.stalled, []

    def away_once(seconds: float) -> list[str]:
        if not refused:
            refused.append(True)
            raise postgres_away()
        return found_stalled(seconds)

    monkeypatch.setattr(store, "stalled", away_once)
    resubmitted: list[str] = []
    with caplog.at_level(logging.WARNING, logger="ragloom_app.jobs.queues"):
        sweeper = JobSweeper(store, 1.0, resubmitted.append)
        assert _resubmitted_by_a_started_sweeper(sweeper, resubmitted) == [job_id]
    assert refused and "sweeping stalled jobs failed" in caplog.text


def test_a_job_queued_again_waits_its_stall_time_before_it_is_submitted_again(
    app: BaseApp,
) -> None:
    store = JobStore(app.engine)
    job_id = empty_job(app)
    backdate(app, job_id, "created_at")
    stalled(app, job_id, "killed")
    submitted: list[str] = []
    assert JobSweeper(store, 1.0, submitted.append).sweep() == [job_id]
    assert submitted == [job_id]  # once: queued again now, not 60 s ago


def test_a_job_cancelled_as_the_sweeper_takes_it_back_is_cancelled(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JobStore(app.engine)
    job_id = empty_job(app)
    stalled(app, job_id, "killed")

    def resubmit(job_id: str) -> None:
        store.request_cancel(job_id)  # the owner presses Cancel as the sweeper takes it

    assert JobSweeper(store, 1.0, resubmit).sweep() == []
    cancelled = store.get(job_id)
    assert cancelled is not None and cancelled.status == JobStatus.CANCELLED


def test_a_job_claimed_as_the_sweeper_takes_it_back_is_left_to_its_new_worker(
    app: BaseApp,
) -> None:
    """Claimed by a live worker the moment the sweeper submits it, and cancelled at once:
    that worker sees the cancel between two files; the sweeper does not end the job under
    it (and remove the upload it reads)."""
    store = JobStore(app.engine)
    job_id = empty_job(app)
    stalled(app, job_id, "killed")

    def claimed_and_cancelled(job_id: str) -> None:
        assert store.claim(job_id, "live", stall_seconds=1.0)
        store.request_cancel(job_id)

    assert JobSweeper(store, 1.0, claimed_and_cancelled).sweep() == []
    running = store.get(job_id)
    assert running is not None and running.status == JobStatus.RUNNING
    assert running.worker == "live" and running.cancel_requested


def test_a_queued_job_left_with_its_cancel_asked_is_cancelled_by_the_first_sweep(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows an older release left queued with a cancel asked: no claim takes them, and
    they counted against their owner's jobs for good. Only a sweeper's first turn looks
    for them: no release since leaves them."""
    store = JobStore(app.engine)
    job_id = empty_job(app)
    alter_job(app, job_id, cancel_requested=True)
    sweeper = JobSweeper(store, 30.0, lambda _: pytest.fail("submitted"))
    assert sweeper.sweep() == []
    cancelled = store.get(job_id)
    assert cancelled is not None and cancelled.status == JobStatus.CANCELLED
    assert cancelled.error == "cancelled by its owner before it started"
    monkeypatch.setattr(store, "cancel_flagged_queued", lambda: pytest.fail("looked again"))
    assert sweeper.sweep() == []


def test_a_stalled_job_whose_resubmission_fails_is_taken_at_the_next_sweep(app: BaseApp) -> None:
    """The queue's broker away as the sweeper submits a stalled job again: the job stays
    running and stalled, not queued with nobody to run it, and the next turn submits it."""
    store = JobStore(app.engine)
    job_id = empty_job(app)
    stalled(app, job_id, "killed")

    resubmitted: list[str] = []

    def broker_away_once(job_id: str) -> None:
        resubmitted.append(job_id)
        if len(resubmitted) == 1:
            raise OperationalError("INSERT", {}, Exception("the connection is lost"))

    sweeper = JobSweeper(store, 1.0, broker_away_once)
    with pytest.raises(OperationalError):
        sweeper.sweep()
    assert store.get(job_id).status == JobStatus.RUNNING  # type: ignore[union-attr]
    assert sweeper.sweep() == [job_id]  # the same sweeper's next turn
    assert resubmitted == [job_id, job_id] and store.get(job_id).status == JobStatus.QUEUED  # type: ignore[union-attr]


def test_a_job_that_keeps_killing_its_workers_is_failed(app: BaseApp) -> None:
    store = JobStore(app.engine)
    job_id = empty_job(app)
    for n in range(MAX_JOB_ATTEMPTS):  # each start, its worker is killed
        stalled(app, job_id, f"killed-{n}")
        assert JobSweeper(store, 1.0, lambda _: None).sweep() == [job_id]
    assert JobRunner(app, "next").run(job_id) == JobStatus.FAILED
    failed = store.get(job_id)
    assert failed is not None and failed.status == JobStatus.FAILED
    assert failed.error == f"its worker stopped {MAX_JOB_ATTEMPTS} times while running it"


def test_a_worker_that_was_killed_with_a_cancel_asked_leaves_it_cancelled(app: BaseApp) -> None:
    store = JobStore(app.engine)
    job_id = empty_job(app)
    stalled(app, job_id, "killed")
    assert store.request_cancel(job_id) == JobStatus.RUNNING  # asked; nobody heeds it
    assert JobSweeper(store, 1.0, lambda _: pytest.fail("resubmitted")).sweep() == []
    assert store.get(job_id).status == JobStatus.CANCELLED  # type: ignore[union-attr]
