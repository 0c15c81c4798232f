"""A job the database goes away under is run again by its own worker once it is back.

The outage is a psycopg error raised where the job runs (as a lost connection raises it
through SQLAlchemy), on the app database of the ``database_url`` fixture; the real
PostgreSQL restart is in tests/e2e/test_indexing_workers.py.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.db.models import IndexingJob, JobStatus
from ragloom_app.jobs import runner as runner_module
from ragloom_app.jobs.runner import MAX_OUTAGE_RERUNS, JobRunner
from ragloom_app.jobs.store import JobStore
from tests.helpers.api_server import replay_app
from tests.helpers.jobs import alter_job, empty_job
from tests.helpers.outages import postgres_away


@pytest.fixture
def app(tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[BaseApp]:
    monkeypatch.setattr(runner_module, "_OUTAGE_POLL_SECONDS", 0.01)
    app = replay_app(tmp_path, database_url=database_url)
    yield app
    app.jobs.close()


def _job(app: BaseApp) -> tuple[JobRunner, str]:
    """A job with no files, claimed by nobody yet, and a runner for it."""
    return JobRunner(app, "worker-a"), empty_job(app)


def _failing(
    runner: JobRunner, monkeypatch: pytest.MonkeyPatch, times: int, meanwhile: Callable[[], None]
) -> list[int]:
    """Make the runner's first ``times`` runs of a job meet an outage, calling
    ``meanwhile`` during each; returns the list the runs are counted in."""
    runs: list[int] = []
    run_claimed = runner._run_claimed

    def outage_first(row: IndexingJob) -> JobStatus:
        runs.append(1)
        if len(runs) <= times:
            meanwhile()
            raise postgres_away()
        return run_claimed(row)

    monkeypatch.setattr(runner, "_run_claimed", outage_first)
    return runs


def test_the_same_claim_runs_the_job_again_once_the_database_answers(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    runner, job_id = _job(app)
    runs = _failing(runner, monkeypatch, 1, lambda: None)
    with caplog.at_level(logging.INFO, logger="ragloom_app.jobs.runner"):
        assert runner.run(job_id) == JobStatus.DONE
    assert len(runs) == 2
    row = JobStore(app.engine).row(job_id)
    assert row is not None and row.status == JobStatus.DONE and row.attempts == 1
    assert "the database is back; running the job again" in caplog.text


def test_a_job_that_keeps_meeting_outages_is_left_to_the_sweeper(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, job_id = _job(app)
    runs = _failing(runner, monkeypatch, 100, lambda: None)
    with pytest.raises(RuntimeError, match="connection failed"):
        runner.run(job_id)
    assert len(runs) == 1 + MAX_OUTAGE_RERUNS
    row = JobStore(app.engine).row(job_id)
    assert row is not None and row.status == JobStatus.RUNNING  # its heartbeat goes stale


def test_a_job_claimed_again_meanwhile_is_not_run_twice(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, job_id = _job(app)

    def claimed_again() -> None:  # by the sweeper and another thread of the same worker
        alter_job(app, job_id, attempts=IndexingJob.attempts + 1)

    runs = _failing(runner, monkeypatch, 1, claimed_again)
    assert runner.run(job_id) is None
    assert len(runs) == 1


def test_a_job_cancelled_during_the_outage_is_cancelled_not_run_again(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, job_id = _job(app)
    store = JobStore(app.engine)
    runs = _failing(runner, monkeypatch, 1, lambda: store.request_cancel(job_id))
    assert runner.run(job_id) == JobStatus.CANCELLED
    assert len(runs) == 1
    row = store.row(job_id)
    assert row is not None and row.status == JobStatus.CANCELLED


def test_a_worker_asked_to_stop_during_the_outage_leaves_the_job_at_once(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C or SIGTERM while a job waits for the database (``ragloom worker`` sets the
    runner's ``stopping``): the job is left to the sweepers, not waited for for minutes."""
    monkeypatch.setattr(runner_module, "_OUTAGE_POLL_SECONDS", 60.0)
    runner, job_id = _job(app)
    runs = _failing(runner, monkeypatch, 1, runner.stopping.set)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="connection failed"):
        runner.run(job_id)
    assert time.monotonic() - started < 30 and len(runs) == 1
    row = JobStore(app.engine).row(job_id)
    assert row is not None and row.status == JobStatus.RUNNING  # its heartbeat goes stale
