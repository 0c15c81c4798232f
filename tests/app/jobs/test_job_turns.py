"""Owners take turns (``ragloom_app.jobs.turns``): a user's twentieth waiting upload does
not hold up another user's first, and a user who keeps uploading does not hold up another's
waiting job for ever. The in-process queue on SQLite and PostgreSQL, and
procrastinate's priorities on PostgreSQL."""

from __future__ import annotations

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
from ragloom_app.jobs.turns import first_in_line, places_ahead
from ragloom_app.jobs.worker import worker_options
from tests.helpers.api_server import replay_app
from tests.helpers.event_loop import run_on_own_loop
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


def test_the_line_serves_first_whom_it_served_least_lately(app: BaseApp) -> None:
    running, alice2, alice3, bob1, bob2, carol1 = _jobs(
        app, "alice", "alice", "alice", "bob", "bob", "carol"
    )
    assert app.jobs.store.claim(running, "w", stall_seconds=60)
    # Each owner's oldest first, those never served before alice (whose job runs); then
    # each owner's second. Behind the running job: bob1, carol1, alice2, bob2, alice3.
    places = [places_ahead(app.engine, j) for j in (bob1, carol1, alice2, bob2, alice3)]
    assert places == [1, 2, 3, 4, 5]
    assert first_in_line(app.engine, [alice3, bob2, alice2]) == alice2
    # The API says so of one queued job (GET /jobs/{id}, an upload's answer), not in lists.
    assert job_out(app, _view(app, bob2)).ahead == 4
    assert job_out(app, _view(app, bob2), with_outcomes=False).ahead is None
    assert job_out(app, _view(app, running)).ahead is None
    alter_job(app, running, status=JobStatus.DONE)
    assert first_in_line(app.engine, [running]) is None  # no longer queued


def test_the_in_process_queue_serves_users_in_turn_whoever_keeps_uploading(
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
        bob1, bob2 = _jobs(app, "bob", "bob")
        queue.submit(bob1)
        queue.submit(bob2)
        release.set()
        for job_id in (alice3, bob2):
            assert finished_job(app, job_id).status == JobStatus.DONE
    finally:
        queue.close()
    # Not alice's three first (the order they came in), nor bob's two after alice's first
    # (the turns counted as they came in): in turn.
    assert runs == [busy, bob1, alice2, bob2, alice3]


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
            jobs = _jobs(app, "alice", "alice", "alice", "bob", "bob")
            alice1, alice2, alice3, bob1, bob2 = jobs
            for job_id in jobs:
                queue.submit(job_id)
            with app.engine.connect() as connection:
                priorities = connection.execute(
                    text("SELECT queueing_lock, priority FROM procrastinate_jobs")
                ).all()
            # The place in the line, negated: each owner's first, then each one's second.
            assert dict(priorities) == {alice1: -1, bob1: -2, alice2: -3, bob2: -4, alice3: -5}

            async def drain() -> None:  # one task at a time, as one worker takes them
                await worker_app.open_async()
                try:
                    await worker_app.run_worker_async(
                        install_signal_handlers=False, wait=False, **worker_options(1, 1.0)
                    )
                finally:
                    await worker_app.close_async()

            run_on_own_loop(drain())
            assert runs == [alice1, bob1, alice2, bob2, alice3]
        finally:
            queue.close()
            app.jobs.close()
            app.engine.dispose()
