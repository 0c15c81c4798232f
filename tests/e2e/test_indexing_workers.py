"""``ragloom worker`` processes on PostgreSQL (procrastinate) and ``chroma run``: jobs an app
submits are indexed by several workers in parallel, a job is cancelled while a worker runs
it, and a worker killed with SIGKILL in the middle of a job loses nothing: another takes
the job, every file ends indexed, and the index checks clean. PostgreSQL restarted while a
worker waits, and while it runs a job, is survived by the same worker process. A worker
starts what its first job needs (its readers sandbox) before it takes jobs."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from ragloom.chunking import READERS_LIMITS
from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.jobs import JobView
from ragloom_app.jobs.queues import BROKER_WAIT_SECONDS
from tests.helpers.api_server import replay_app
from tests.helpers.chroma_server import ChromaServer, chroma_server
from tests.helpers.job_workers import WorkerSetup, wait_finished, worker_setup
from tests.helpers.postgres import PostgresServer, database, fresh_database, throwaway_postgres

pytestmark = pytest.mark.postgres

STALL = 3.0
# The workers of the outage tests embed each file in 0.2 s (hash embeddings are so fast
# that a 30-file job once ended between two looks for its third file).
PACED_EMBEDDINGS = {"hash": {"class": "tests.helpers.slow_embeddings.SlowEmbeddings", "delay": 0.2}}


@pytest.fixture(scope="module")
def chroma() -> Iterator[ChromaServer]:
    # One for the module: each test's fresh database numbers its index 1 again, but each
    # index's collection has a name of its own (IndexRecord.store_name).
    with chroma_server() as running:
        yield running


@pytest.fixture
def setup(
    postgres_server: PostgresServer, chroma: ChromaServer, tmp_path: Path
) -> Iterator[tuple[BaseApp, WorkerSetup]]:
    with (
        database(postgres_server) as url,
        worker_setup(tmp_path, url, chroma.url, stall=STALL) as workers,
    ):
        app = replay_app(
            tmp_path,
            database_url=url,
            chroma_server=chroma.url,
            job_queue="procrastinate",
            job_stall_seconds=STALL,
        )
        assert app.settings.data_dir == workers.data_dir  # one data folder for all
        yield app, workers
        app.jobs.close()


def _files(folder: Path, prefix: str, count: int, paragraphs: int) -> list[tuple[str, Path]]:
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for n in range(count):
        path = folder / f"{prefix}-{n}"
        text = "\n\n".join(
            f"Section {k} of {prefix} {n}: the Zorblax gauge {k} reads {k * 7 + n} units, "
            "measured twice and written down."
            for k in range(paragraphs)
        )
        path.write_text(text, encoding="utf-8")
        files.append((f"{prefix}-{n}.md", path))
    return files


def _running(app: BaseApp, job: JobView, setup: WorkerSetup, done_at_least: int) -> JobView:
    deadline = time.monotonic() + 120
    while True:
        seen = app.jobs.store.get(job.id)
        assert seen is not None
        if seen.status == JobStatus.RUNNING and seen.files_done >= done_at_least:
            return seen
        assert not seen.finished and time.monotonic() < deadline, (seen, setup.logs())
        time.sleep(0.02)


def test_two_workers_index_the_jobs_of_an_app_in_parallel(
    setup: tuple[BaseApp, WorkerSetup], tmp_path: Path
) -> None:
    app, workers = setup
    index = app.indices.get("My files")
    jobs = [
        app.jobs.submit_files(index, "local", _files(tmp_path / "in", f"j{n}", 3, 150), move=True)
        for n in range(4)
    ]
    workers.start_worker()
    workers.start_worker()
    finished = wait_finished(app, jobs, workers)
    assert [job.status for job in finished] == [JobStatus.DONE] * 4, workers.logs()
    assert all(o["status"] == "indexed" for job in finished for o in job.outcomes)
    assert len({job.worker for job in finished}) == 2  # both took jobs
    assert len(index.list_sources()) == 12 and index.check().clean


def _job_under_way(
    app: BaseApp, workers: WorkerSetup, folder: Path, done_at_least: int = 1, count: int = 30
) -> tuple[JobView, subprocess.Popen[bytes]]:
    """A job of ``count`` files into "My files", a worker started, once it has indexed a
    file or more; the job as then seen, and the worker."""
    index = app.indices.get("My files")
    files = _files(folder, folder.name, count, 60)
    job = app.jobs.submit_files(index, "local", files, move=True)
    worker = workers.start_worker()
    return _running(app, job, workers, done_at_least), worker


def test_sigterm_lets_the_job_finish_and_a_second_one_stops_the_worker_at_once(
    setup: tuple[BaseApp, WorkerSetup], tmp_path: Path
) -> None:
    app, workers = setup
    # Long enough (about 4 s here) to be under way still when the signals come.
    job, worker = _job_under_way(app, workers, tmp_path / "t", count=150)
    worker.terminate()  # the first: no new job is taken, the one under way is finished
    time.sleep(0.5)
    assert worker.poll() is None, workers.logs()
    assert app.jobs.store.get(job.id).status == JobStatus.RUNNING  # type: ignore[union-attr]
    worker.terminate()  # the second: at once, as a user pressing Ctrl-C again expects
    # Ended by the signal, not by finishing its job and its stop (status 0).
    assert worker.wait(timeout=15) == -signal.SIGTERM, workers.logs()


def test_a_job_is_cancelled_while_a_worker_runs_it(
    setup: tuple[BaseApp, WorkerSetup], tmp_path: Path
) -> None:
    app, workers = setup
    index = app.indices.get("My files")
    job, _ = _job_under_way(app, workers, tmp_path / "c")
    app.jobs.cancel(job.id, "local")
    (ended,) = wait_finished(app, [job], workers)
    assert ended.status == JobStatus.CANCELLED
    statuses = [o["status"] for o in ended.outcomes]
    assert statuses.count("indexed") >= 1 and statuses.count("cancelled") >= 1
    assert set(statuses) == {"indexed", "cancelled"} and len(statuses) == 30
    assert len(index.list_sources()) == statuses.count("indexed") and index.check().clean


def test_a_worker_killed_in_the_middle_of_a_job_loses_nothing(
    setup: tuple[BaseApp, WorkerSetup], tmp_path: Path
) -> None:
    app, workers = setup
    index = app.indices.get("My files")
    job, victim = _job_under_way(app, workers, tmp_path / "k", done_at_least=3)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert app.jobs.store.get(job.id).status == JobStatus.RUNNING  # type: ignore[union-attr]
    workers.start_worker()  # finds the job stalled once its heartbeat is STALL s old
    (ended,) = wait_finished(app, [job], workers)
    assert ended.status == JobStatus.DONE and ended.attempts == 2, workers.logs()
    assert ended.worker != job.worker  # the job as seen under way, on the first worker
    # Those indexed before the kill come back "skipped" (the same content is there).
    assert {o["status"] for o in ended.outcomes} <= {"indexed", "skipped"}
    sources = index.list_sources()
    assert len(sources) == 30 and {s["status"] for s in sources} == {"indexed"}
    assert index.check().clean


@contextmanager
def _restartable(
    tmp_path: Path, stall: float = STALL, embeddings: dict[str, dict[str, Any]] | None = None
) -> Iterator[tuple[PostgresServer, BaseApp, WorkerSetup]]:
    """A durable PostgreSQL cluster of its own (the test stops and starts it), an app and
    the workers' setup on it (``embeddings``: the workers', hash embeddings by default)."""
    with throwaway_postgres(durable=True) as server, chroma_server() as chroma:
        url = fresh_database(server)
        with worker_setup(tmp_path, url, chroma.url, stall=stall, embeddings=embeddings) as workers:
            app = replay_app(
                tmp_path,
                database_url=url,
                chroma_server=chroma.url,
                job_queue="procrastinate",
                job_stall_seconds=stall,
            )
            yield server, app, workers
            app.jobs.close()


def test_workers_go_on_after_the_database_and_broker_restarts(tmp_path: Path) -> None:
    """PostgreSQL is the app database and procrastinate's broker: stopped as in a crash
    while a worker waits for jobs, then started. A job submitted during the outage is
    refused cleanly; one submitted after is run by the same worker process, unrestarted."""
    with _restartable(tmp_path) as (server, app, workers):
        index = app.indices.get("My files")
        worker = workers.start_worker()
        workers.wait_ready()
        before = app.jobs.submit_files(
            index, "local", _files(tmp_path / "in", "a", 2, 5), move=True
        )
        assert wait_finished(app, [before], workers)[0].status == JobStatus.DONE
        server.stop()
        with pytest.raises(OperationalError):  # the API answers it 503 (api/errors.py)
            app.jobs.submit_files(index, "local", _files(tmp_path / "in", "b", 1, 5), move=True)
        assert not any((workers.data_dir / "jobs").iterdir())  # nothing staged and left
        server.start()
        _indexed_by(worker, app, workers, _files(tmp_path / "in", "c", 2, 5))


def test_a_worker_outlasts_an_outage_longer_than_it_waits_for_the_database(
    tmp_path: Path,
) -> None:
    """procrastinate's worker stops once a query waited BROKER_WAIT_SECONDS for a
    connection; ``ragloom worker`` starts it again, so a longer outage ends no worker
    process and a job submitted afterwards is run by it."""
    with _restartable(tmp_path) as (server, app, workers):
        worker = workers.start_worker()
        workers.wait_ready()
        server.stop()
        time.sleep(BROKER_WAIT_SECONDS + 6)
        server.start()
        _indexed_by(worker, app, workers, _files(tmp_path / "in", "late", 2, 5))
        # The whole log: the pool's reconnection warnings may fill its last lines.
        assert "the worker stopped (its database could not be reached)" in workers.logs(None)
        worker.terminate()  # asked to stop, it stops for good, and says it ended well
        assert worker.wait(timeout=30) == 0, workers.logs()


def _indexed_by(
    worker: subprocess.Popen[bytes],
    app: BaseApp,
    workers: WorkerSetup,
    files: list[tuple[str, Path]],
) -> None:
    """Submit ``files`` once the database is back, and see ``worker`` index them."""
    index = app.indices.get("My files")
    deadline = time.monotonic() + 120
    while True:  # the app's pool and the worker reconnect on their own
        try:
            job = app.jobs.submit_files(index, "local", files, move=True)
            break
        except Exception:
            assert time.monotonic() < deadline, workers.logs()
            time.sleep(0.5)
    (done,) = wait_finished(app, [job], workers, timeout=120)
    assert done.status == JobStatus.DONE and worker.poll() is None, workers.logs()
    assert done.worker is not None and str(worker.pid) in done.worker
    assert index.check().clean


def _cut_by_an_outage(
    server: PostgresServer, app: BaseApp, workers: WorkerSetup, folder: Path
) -> tuple[JobView, subprocess.Popen[bytes]]:
    """A 30-file job, a worker running it, and PostgreSQL stopped once 3 files are done."""
    index = app.indices.get("My files")
    job = app.jobs.submit_files(index, "local", _files(folder, folder.name, 30, 60), move=True)
    worker = workers.start_worker()
    _running(app, job, workers, done_at_least=3)
    server.stop()
    return job, worker


def test_a_job_running_through_a_database_restart_ends_with_every_file_accounted_for(
    tmp_path: Path,
) -> None:
    """PostgreSQL (database and broker) stopped as in a crash while a worker is in the
    middle of a job, then started: the job ends, each file indexed or failed with its
    reason, none half-stored, and the index checks clean, without restarting the worker.
    Its worker runs it again as soon as the database is back: the job's heartbeat is
    given far longer to go stale than the test takes, and it is never claimed twice."""
    with _restartable(tmp_path, 120.0, PACED_EMBEDDINGS) as (server, app, workers):
        index = app.indices.get("My files")
        job, worker = _cut_by_an_outage(server, app, workers, tmp_path / "r")
        time.sleep(2.0)
        server.start()
        (ended,) = wait_finished(app, [job], workers, timeout=100)
        assert ended.status == JobStatus.DONE, (ended, workers.logs())
        assert worker.poll() is None, workers.logs()
        # The outage cut the job short; it was run again from the start (the files
        # indexed before come back "skipped"), by the same worker process, which still
        # held it: the sweeper had nothing to take back.
        assert ended.attempts == 1, (ended, workers.logs())
        # The outage reached the job (the worker logs at WARNING: not the "back" line).
        assert f"job {job.id}: the database went away" in workers.logs(None)
        outcomes = {o["file"]: o for o in ended.outcomes}
        assert len(outcomes) == 30
        for outcome in outcomes.values():
            assert outcome["status"] in {"indexed", "skipped", "failed"}, outcome
            assert outcome["status"] != "failed" or outcome["reason"], outcome
        sources = index.list_sources()
        assert len(sources) == 30, sources
        for source in sources:  # none left "indexing": each done, or failed saying why
            assert source["status"] == "indexed" or source["reason"], source
        assert index.check().clean


def test_sigterm_while_a_job_waits_for_the_database_stops_the_worker_soon(
    tmp_path: Path,
) -> None:
    """A worker whose job waits for PostgreSQL to come back (up to OUTAGE_WAIT_SECONDS)
    is asked to stop: it leaves the job to the sweepers and ends, rather than holding the
    stop until the database is back and the job run again."""
    with _restartable(tmp_path, 120.0, PACED_EMBEDDINGS) as (server, app, workers):
        job, worker = _cut_by_an_outage(server, app, workers, tmp_path / "s")
        deadline = time.monotonic() + 60
        while f"job {job.id}: the database went away" not in workers.logs(None):
            assert time.monotonic() < deadline and worker.poll() is None, workers.logs()
            time.sleep(0.2)
        stopped = time.monotonic()
        worker.terminate()
        assert worker.wait(timeout=60) == 0, workers.logs()
        assert time.monotonic() - stopped < 30, workers.logs()
        assert f"job {job.id}: the worker is stopping; left to the sweepers" in workers.logs(None)
        server.start()


def _children(pid: int) -> dict[int, str]:
    """The processes ``pid`` started (its threads' children), with their command lines."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in map(int, (task / "children").read_text().split()):
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            found[child] = cmdline.replace(b"\0", b" ").decode(errors="replace")
    return found


def test_a_worker_starts_its_readers_sandbox_before_it_takes_jobs(
    setup: tuple[BaseApp, WorkerSetup],
) -> None:
    """Its first job does not pay for starting the processes files are read in (a
    forkserver and its workers, about a second)."""
    _, workers = setup
    worker = workers.start_worker()
    workers.wait_ready()
    (server,) = [pid for pid, cmd in _children(worker.pid).items() if "forkserver" in cmd]
    assert len(_children(server)) == READERS_LIMITS.workers
