"""A queue handed a job it still holds does not queue it twice: the sweeper submits again
every job that waited past its stall time (it may have been lost on the way), so a job
only waiting its turn must cost nothing more. Both queues: the in-process one, and
procrastinate on PostgreSQL."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.jobs.queues import InProcessJobQueue, ProcrastinateJobQueue, procrastinate_app
from ragloom_app.jobs.runner import JobRunner
from ragloom_app.jobs.staging import API_UPLOAD_PREFIX, STAGING_GRACE_SECONDS
from ragloom_app.jobs.worker import worker_options
from tests.helpers.api_server import replay_app
from tests.helpers.event_loop import run_on_own_loop
from tests.helpers.jobs import empty_job, finished_job
from tests.helpers.postgres import PostgresServer, database


@pytest.fixture
def app(tmp_path: Path, database_url: str) -> Iterator[BaseApp]:
    started = replay_app(tmp_path, database_url=database_url)
    yield started
    started.jobs.close()


def test_the_in_process_queue_runs_a_job_submitted_again_while_it_waits_once(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    busy, waiting = empty_job(app), empty_job(app)
    release, started = threading.Event(), threading.Event()
    runs: list[str] = []
    run = JobRunner.run

    def recorded(runner: JobRunner, job_id: str) -> JobStatus | None:
        runs.append(job_id)
        if job_id == busy:  # the only worker is busy while the other job is submitted
            started.set()
            release.wait(30)
        return run(runner, job_id)

    monkeypatch.setattr(JobRunner, "run", recorded)
    queue = InProcessJobQueue(app, workers=1)  # takes both queued jobs, in their order
    try:
        assert started.wait(30)
        for _ in range(3):  # the sweeper's turns while it waits
            queue.submit(waiting)
        assert queue.unheld([busy, waiting]) == [busy]  # busy was taken by the worker
        release.set()
        last = empty_job(app)  # one worker, in order: anything submitted before has run
        queue.submit(last)
        assert finished_job(app, last).status == JobStatus.DONE
    finally:
        queue.close()
    assert runs == [busy, waiting, last]


@pytest.mark.postgres
def test_procrastinate_holds_one_task_of_a_job_waiting_and_tells_the_lost_ones(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    """The queueing lock covers the tasks waiting for a worker ('todo'): a job whose task
    a worker took and dropped ('doing' for good: killed before it claimed the job), or
    whose task failed (the database away as it claimed), can be deferred again."""
    with database(postgres_server) as url:
        app = replay_app(tmp_path, database_url=url)
        queue = ProcrastinateJobQueue(app)
        try:
            held, dropped, failed, never = (empty_job(app) for _ in range(4))
            for job_id in (held, held, held, dropped, failed):
                queue.submit(job_id)
            with app.engine.begin() as connection:
                for job_id, status in ((dropped, "doing"), (failed, "failed")):
                    connection.execute(
                        text("UPDATE procrastinate_jobs SET status = :s WHERE queueing_lock = :j"),
                        {"s": status, "j": job_id},
                    )
            assert queue.unheld([held, dropped, failed, never]) == [dropped, failed, never]
            for job_id in (dropped, failed, never):
                queue.submit(job_id)
            assert queue.unheld([held, dropped, failed, never]) == []
            with app.engine.connect() as connection:
                waiting = connection.execute(
                    text(
                        "SELECT args->>'job_id', count(*) FROM procrastinate_jobs"
                        " WHERE status = 'todo' GROUP BY 1"
                    )
                ).all()
            assert dict(waiting) == {held: 1, dropped: 1, failed: 1, never: 1}
        finally:
            queue.close()
            app.jobs.close()
            app.engine.dispose()


@pytest.mark.postgres
def test_a_worker_deletes_the_task_of_a_job_it_ran(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    """procrastinate keeps every task by default: ``ragloom worker``'s options delete those
    that succeeded, or its tables grow by each upload's rows for ever. The job's own row
    stays, and says what became of it."""
    with database(postgres_server) as url:
        app = replay_app(tmp_path, database_url=url)
        queue = ProcrastinateJobQueue(app)
        worker_app = procrastinate_app(app)
        try:
            job_id = empty_job(app)
            queue.submit(job_id)

            async def drain() -> None:  # runs the tasks waiting, then returns
                await worker_app.open_async()
                try:
                    options = worker_options(1, 1.0)
                    await worker_app.run_worker_async(
                        install_signal_handlers=False, wait=False, **options
                    )
                finally:
                    await worker_app.close_async()

            run_on_own_loop(drain())
            assert finished_job(app, job_id).status == JobStatus.DONE
            with app.engine.connect() as connection:
                left = connection.execute(
                    text("SELECT status FROM procrastinate_jobs WHERE queueing_lock = :j"),
                    {"j": job_id},
                ).all()
            assert left == []
        finally:
            queue.close()
            app.jobs.close()
            app.engine.dispose()


@pytest.mark.postgres
def test_an_app_process_on_procrastinate_clears_the_api_uploads_a_killed_one_left(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    """Only the workers swept them, in their own data folder: an app process on a machine
    of its own kept the upload folders of every time it was killed mid-copy."""
    with database(postgres_server) as url:
        app = replay_app(tmp_path, database_url=url)
        uploads = app.settings.data_dir / "uploads"
        left, fresh = uploads / f"{API_UPLOAD_PREFIX}left", uploads / f"{API_UPLOAD_PREFIX}now"
        for folder in (left, fresh):
            folder.mkdir(parents=True)
            (folder / "0").write_text("a file of an upload being copied")
        an_hour_ago = time.time() - STAGING_GRACE_SECONDS - 60
        for path in (left, left / "0"):
            os.utime(path, (an_hour_ago, an_hour_ago))
        queue = ProcrastinateJobQueue(app)  # as the app process starts again
        try:
            assert not left.exists() and (fresh / "0").is_file()
        finally:
            queue.close()
            app.jobs.close()
