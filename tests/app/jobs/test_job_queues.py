"""A queue handed a job it still holds does not queue it twice: the sweeper submits again
every job that waited past its stall time (it may have been lost on the way), so a job
only waiting its turn must cost nothing more. Both queues: the in-process one, and
procrastinate on PostgreSQL."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.jobs.queues import InProcessJobQueue, ProcrastinateJobQueue
from ragloom_app.jobs.runner import JobRunner
from ragloom_app.jobs.store import JobStore
from tests.helpers.api_server import replay_app
from tests.helpers.postgres import PostgresServer, database


@pytest.fixture
def app(tmp_path: Path, database_url: str) -> Iterator[BaseApp]:
    started = replay_app(tmp_path, database_url=database_url)
    yield started
    started.jobs.close()


def _job(app: BaseApp) -> str:
    index_id = app.indices.get("My files").id
    return JobStore(app.engine).create(index_id=index_id, owner="local", kind="add", files=[]).id


def test_the_in_process_queue_runs_a_job_submitted_again_while_it_waits_once(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    busy, waiting = _job(app), _job(app)
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
        release.set()
        deadline = time.monotonic() + 30
        while JobStore(app.engine).get(waiting).status != JobStatus.DONE:  # type: ignore[union-attr]
            assert time.monotonic() < deadline, runs
            time.sleep(0.05)
    finally:
        queue.close()
    assert runs.count(waiting) == 1
    assert JobStore(app.engine).get(busy).status == JobStatus.DONE  # type: ignore[union-attr]


@pytest.mark.postgres
def test_procrastinate_keeps_one_task_of_a_job_waiting(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    with database(postgres_server) as url:
        app = replay_app(tmp_path, database_url=url)
        queue = ProcrastinateJobQueue(app)
        try:
            job_id = _job(app)
            for _ in range(3):
                queue.submit(job_id)
            with app.engine.connect() as connection:
                waiting = connection.execute(
                    text(
                        "SELECT count(*) FROM procrastinate_jobs"
                        " WHERE args->>'job_id' = :job AND status = 'todo'"
                    ),
                    {"job": job_id},
                ).scalar()
            assert waiting == 1
        finally:
            queue.close()
            app.jobs.close()
            app.engine.dispose()
