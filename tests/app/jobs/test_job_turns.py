"""Owners take turns (``ragloom_app.jobs.turns``): a user's twentieth waiting upload does
not hold up another user's first. The in-process queue on SQLite and PostgreSQL, and
procrastinate's priorities on PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from ragloom_app.api.job_routes import job_out
from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.jobs import JobView
from ragloom_app.jobs.queues import InProcessJobQueue, ProcrastinateJobQueue, procrastinate_app
from ragloom_app.jobs.runner import JobRunner
from ragloom_app.jobs.turns import places_ahead, turn_of
from ragloom_app.jobs.worker import worker_options
from tests.helpers.api_server import replay_app
from tests.helpers.jobs import alter_job, finished_job
from tests.helpers.postgres import PostgresServer, database


@pytest.fixture
def app(tmp_path: Path, database_url: str) -> Iterator[BaseApp]:
    started = replay_app(tmp_path, database_url=database_url)
    yield started
    started.jobs.close()


def _jobs(app: BaseApp, *owners: str) -> list[str]:
    """New queued jobs with no files, one per owner named, in that order; queued to none."""
    index_id = app.indices.get("My files").id
    return [
        app.jobs.store.create(index_id=index_id, owner=owner, kind="add", files=[]).id
        for owner in owners
    ]


def _view(app: BaseApp, job_id: str) -> JobView:
    found = app.jobs.store.get(job_id)
    assert found is not None
    return found


def test_each_owners_oldest_waiting_job_comes_first_and_places_say_so(app: BaseApp) -> None:
    running, alice2, alice3, bob1, bob2 = _jobs(app, "alice", "alice", "alice", "bob", "bob")
    assert [turn_of(app.engine, j) for j in (running, alice2, alice3, bob1, bob2)] == [
        0,
        1,
        2,
        0,
        1,
    ]
    assert app.jobs.store.claim(running, "w", stall_seconds=60)
    # Behind the running job: bob's first, then alice's second and bob's second by age.
    assert places_ahead(app.engine, bob1) == 1
    assert places_ahead(app.engine, alice2) == 2
    assert places_ahead(app.engine, bob2) == 3
    assert places_ahead(app.engine, alice3) == 4
    # The API says so of one queued job (GET /jobs/{id}, an upload's answer), not in lists.
    assert job_out(app, _view(app, bob2)).ahead == 3
    assert job_out(app, _view(app, bob2), with_outcomes=False).ahead is None
    assert job_out(app, _view(app, running)).ahead is None
    alter_job(app, running, status=JobStatus.DONE)  # an ended job has none: alice2 is next
    assert turn_of(app.engine, alice2) == 0 and turn_of(app.engine, running) == 0


def test_the_in_process_queue_runs_another_owners_job_before_a_users_later_ones(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    busy, alice2, alice3 = _jobs(app, "alice", "alice", "alice")
    release, started = threading.Event(), threading.Event()
    runs: list[str] = []
    run = JobRunner.run

    def recorded(runner: JobRunner, job_id: str) -> JobStatus | None:
        runs.append(job_id)
        if job_id == busy:  # the only worker is busy while bob uploads
            started.set()
            release.wait(30)
        return run(runner, job_id)

    monkeypatch.setattr(JobRunner, "run", recorded)
    queue = InProcessJobQueue(app, workers=1)  # takes alice's queued jobs
    try:
        assert started.wait(30)
        (bob1,) = _jobs(app, "bob")
        queue.submit(bob1)
        release.set()
        assert finished_job(app, alice3).status == JobStatus.DONE
    finally:
        queue.close()
    assert runs == [busy, bob1, alice2, alice3]


@pytest.mark.postgres
def test_procrastinate_takes_the_jobs_by_their_owners_turns(
    tmp_path: Path, postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[str] = []
    run = JobRunner.run

    def recorded(runner: JobRunner, job_id: str) -> JobStatus | None:
        runs.append(job_id)
        return run(runner, job_id)

    monkeypatch.setattr(JobRunner, "run", recorded)
    with database(postgres_server) as url:
        app = replay_app(tmp_path, database_url=url)
        queue = ProcrastinateJobQueue(app)
        worker_app = procrastinate_app(app)
        try:
            alice1, alice2, alice3, bob1 = _jobs(app, "alice", "alice", "alice", "bob")
            for job_id in (alice1, alice2, alice3, bob1):
                queue.submit(job_id)
            with app.engine.connect() as connection:
                priorities = connection.execute(
                    text("SELECT queueing_lock, priority FROM procrastinate_jobs")
                ).all()
            assert dict(priorities) == {alice1: 0, alice2: -1, alice3: -2, bob1: 0}

            async def drain() -> None:  # one task at a time, as one worker takes them
                await worker_app.open_async()
                try:
                    await worker_app.run_worker_async(
                        install_signal_handlers=False, wait=False, **worker_options(1, 1.0)
                    )
                finally:
                    await worker_app.close_async()

            asyncio.run(drain())
            assert runs == [alice1, bob1, alice2, alice3]
        finally:
            queue.close()
            app.jobs.close()
            app.engine.dispose()
