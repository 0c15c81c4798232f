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
from typing import Any

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.db.models import IndexingJob, JobStatus
from ragloom_app.index.file.source_steps import SourceSteps
from ragloom_app.jobs import runner as runner_module
from ragloom_app.jobs.runner import MAX_OUTAGE_RERUNS, JobRunner
from ragloom_app.jobs.store import JobStore
from tests.helpers.api_server import replay_app
from tests.helpers.jobs import alter_job, empty_job, numbered_documents, staged_job
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

    def outage_first(row: IndexingJob, *rest: Any) -> JobStatus | None:
        runs.append(1)
        if len(runs) <= times:
            meanwhile()
            raise postgres_away()
        return run_claimed(row, *rest)

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


def test_a_file_the_outage_cut_short_is_finished_when_the_job_is_cancelled_meanwhile(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database goes away as a file is being written, and its owner cancels the job
    during the outage: the job is not run again, but the file it was on is finished (as a
    cancel lets it finish), not left shown queued until the next start of a worker."""
    job_id = staged_job(app, numbered_documents(tmp_path / "in", 2), "cut-short")
    store, finish, cut = JobStore(app.engine), SourceSteps._finish, []

    def cut_short(steps: SourceSteps, *args: object, **kwargs: object) -> object:
        if not cut:
            cut.append(True)
            store.request_cancel(job_id)
            raise postgres_away()
        return finish(steps, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SourceSteps, "_finish", cut_short)
    assert JobRunner(app, "worker-a").run(job_id) == JobStatus.CANCELLED
    row = store.row(job_id)
    assert row is not None and cut
    index = app.indices.get("My files")
    indexed = {s["name"] for s in index.list_sources() if s["status"] == "indexed"}
    reported = {o["file"]: o["status"] for o in row.outcomes}
    assert indexed and set(reported) == {"doc0.md", "doc1.md"}
    assert {name for name, status in reported.items() if status == "indexed"} == indexed
    assert {s["status"] for s in index.list_sources()} == {"indexed"}
    assert index.check().clean


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
