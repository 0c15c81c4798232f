"""Where indexing jobs wait for a worker: the app's own threads, or procrastinate.

``JOB_QUEUE = "in-process"`` (the laptop default) runs jobs in ``JOB_WORKERS`` threads of
the app process: no service to start. ``"procrastinate"`` puts them in the PostgreSQL app
database through `procrastinate <https://procrastinate.readthedocs.io>`_, a maintained
Postgres-backed task queue (``FOR UPDATE SKIP LOCKED`` and ``LISTEN/NOTIFY``, no broker
besides the database the app already needs), for ``ragloom worker`` processes on this
machine or others (docs/deploy.md, "Indexing jobs").

Either way a job's state lives in the app's ``indexing_jobs`` table
(:mod:`ragloom_app.jobs.store`), and :class:`JobSweeper` takes back the jobs of workers
that died, so neither queue loses one.
"""

from __future__ import annotations

import abc
import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import make_url, text
from sqlalchemy.engine import Engine

from ragloom_app.db.models import JobStatus
from ragloom_app.jobs.runner import JobRunner, worker_name
from ragloom_app.jobs.staging import remove_leftover_api_uploads, remove_leftover_staging
from ragloom_app.jobs.store import JobStore
from ragloom_app.jobs.turns import first_in_line, refresh_priorities

if TYPE_CHECKING:
    import procrastinate

    from ragloom_app.app import BaseApp

__all__ = ["InProcessJobQueue", "JobQueue", "JobSweeper", "ProcrastinateJobQueue"]

logger = logging.getLogger(__name__)

BROKER_WAIT_SECONDS = 10.0
"""How long a query of procrastinate's waits for a connection to the database (its pool's
``timeout``; 30 s by default). A worker whose query waited that long stops, and ``ragloom
worker`` starts it again (:mod:`ragloom_app.jobs.worker`); opening the pool at a start
waits psycopg_pool's own 30 s."""

HAND_BACK_WAIT_SECONDS = 10.0
"""How long closing the in-process queue waits for its running jobs to get between two
files and be handed back to the queue; past it they are handed back at once."""
TASK_NAME = "ragloom.index_job"
"""The procrastinate task that runs one job (its only argument: ``job_id``)."""
QUEUE_NAME = "indexing"
_LAST = -(2**31) + 1  # a task's priority before its place in the line is set (jobs/turns.py)
_SCHEMA_LOCK = 7_261_023_119  # PostgreSQL advisory lock key: one process applies the schema


class JobQueue(abc.ABC):
    """Hands jobs to workers. :meth:`submit` never runs the job in the caller's thread."""

    @abc.abstractmethod
    def submit(self, job_id: str) -> None:
        """Have a worker run the job (already stored as ``queued``). A job this queue
        holds already, not yet taken by a worker, is not queued a second time."""

    def unheld(self, job_ids: Sequence[str]) -> list[str]:
        """Those of ``job_ids`` this queue does not hold waiting for a worker (all of them,
        for a queue that cannot tell): the sweeper submits only these again."""
        return list(job_ids)

    def close(self) -> None:  # noqa: B027 - a queue with nothing to stop keeps this
        """Stop what this object started (threads, connections); queued jobs stay queued."""


class JobSweeper:
    """Takes back the jobs of dead workers: cancelled if their owner asked, else queued
    again and submitted; and submits again the jobs queued for ``stall_seconds`` or more,
    which the queue may never have been handed (below). Runs every ``stall_seconds / 2``
    in a thread of its own, with ``also`` (if given) at each turn before the sweep. With
    ``data_dir``, each turn also removes the staged uploads no job will read
    (:func:`~ragloom_app.jobs.staging.remove_leftover_staging`), and the HTTP API's
    upload folders a killed process left (``remove_leftover_api_uploads``).

    A queued job whose queue lost it: the database went away between writing its row and
    handing it over (procrastinate's defer failed), or as a worker that had taken it from
    the queue was about to claim it, or the reply to the row's commit was lost. ``unheld``
    (the queue's :meth:`JobQueue.unheld`) leaves out the jobs the queue still holds, in
    one query, and each queue's :meth:`JobQueue.submit` ignores a job it holds anyway: a
    job only waiting its turn is neither run twice nor queued again at every turn.
    """

    def __init__(
        self,
        store: JobStore,
        stall_seconds: float,
        resubmit: Callable[[str], None],
        also: Callable[[], object] | None = None,
        unheld: Callable[[Sequence[str]], list[str]] | None = None,
        data_dir: Path | None = None,
    ):
        self.store = store
        self.stall_seconds = stall_seconds
        self.resubmit = resubmit
        self.also = also
        self.unheld = unheld if unheld is not None else list
        self.data_dir = data_dir
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._flagged_cancelled = False

    def sweep(self) -> list[str]:
        """One pass; returns the ids of the jobs queued again."""
        taken: list[str] = []
        for job_id in self.store.stalled(self.stall_seconds):
            if self.store.cancel_stalled(job_id, self.stall_seconds):
                continue  # its owner asked it to stop: no worker will
            # Submitted before it is shown queued: if the submission fails (the broker
            # away), the job stays running and stalled, and the next turn tries again. A
            # claim takes a stalled job as it takes a queued one, and only once.
            self.resubmit(job_id)
            if self.store.requeue_stalled(job_id, self.stall_seconds):
                logger.warning("job %s lost its worker: queued again", job_id)
                taken.append(job_id)
            else:  # a cancel asked just now; or claimed meanwhile, and then left alone
                self.store.cancel_stalled(job_id, self.stall_seconds)
        if not self._flagged_cancelled:  # only an older release left such rows
            self.store.cancel_flagged_queued()
            self._flagged_cancelled = True
        for job_id in self.unheld(self.store.waiting(self.stall_seconds)):
            self.resubmit(job_id)
        if self.data_dir is not None:
            try:
                remove_leftover_staging(self.data_dir, self.store)
                remove_leftover_api_uploads(self.data_dir)
            except Exception:  # its own trouble must not stop the sweep of jobs
                logger.warning("removing leftover staged uploads failed", exc_info=True)
        return taken

    def start(self, *, at_once: bool = False) -> None:
        """Sweep in the background until :meth:`stop`; the first turn now if ``at_once``
        (a turn that fails, the database away, is tried again at the next)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._loop, args=(at_once,), name="ragloom-job-sweeper", daemon=True
        )
        self._thread.start()

    def _loop(self, at_once: bool) -> None:
        failing = False
        pause = max(self.stall_seconds / 2, 0.5)
        while not self._stop.wait(0.0 if at_once else pause):
            at_once = False
            try:
                if self.also is not None:
                    self.also()
                self.sweep()
                failing = False
            except Exception:  # the database away for a moment: sweep at the next turn
                # Said once per outage, not at every turn of it.
                logger.log(
                    logging.DEBUG if failing else logging.WARNING,
                    "sweeping stalled jobs failed",
                    exc_info=not failing,
                )
                failing = True

    def stop(self) -> None:
        """Stop sweeping."""
        self._stop.set()


class InProcessJobQueue(JobQueue):
    """Runs jobs in ``workers`` daemon threads of this process, their owners taking turns
    (:mod:`~ragloom_app.jobs.turns`).

    At start it also takes the jobs this database holds queued (a restart of the app
    resumes what was waiting) or running on a dead worker (see :class:`JobSweeper`).
    """

    def __init__(self, app: BaseApp, workers: int = 1) -> None:
        # A name of this queue's own: a job it hands back as it closes may be claimed again
        # by a queue started after it in this process, with the same attempt number (see
        # JobStore.hand_back), and this one's late writes must not pass for that claim's.
        self._runner = JobRunner(app, worker_name(f"in-process-{uuid.uuid4().hex[:6]}"))
        # The jobs submitted, not yet taken by a worker thread, in submission order (a dict
        # as an ordered set); guarded by _lock, with _ready telling the threads of a change.
        self._waiting: dict[str, None] = {}
        self._closing = False
        self._threads = [
            threading.Thread(target=self._work, name=f"ragloom-job-worker-{n}", daemon=True)
            for n in range(workers)
        ]
        # Jobs a worker could not even claim (the database away): tried again by the
        # sweeper's thread at its next turn. The three sets are guarded by _lock.
        self._retry: set[str] = set()
        self._failed: set[str] = set()  # jobs whose failure was logged with its trace
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._sweeper = JobSweeper(
            self._runner.store,
            self._runner.stall_seconds,
            self.submit,
            also=self._resubmit,
            unheld=self.unheld,
            data_dir=app.settings.data_dir,
        )
        for thread in self._threads:
            thread.start()
        try:
            for job in self._runner.store.jobs(statuses=[JobStatus.QUEUED], limit=10_000)[::-1]:
                self.submit(job.id)
            self._sweeper.sweep()
        except Exception:
            # The database away as the app starts: the sweeper's turns take the jobs
            # waiting (JobSweeper) once it is back. The queue itself works.
            logger.warning("taking up the waiting jobs failed; the sweeper will", exc_info=True)
        self._sweeper.start()

    def submit(self, job_id: str) -> None:
        with self._ready:
            if job_id not in self._waiting:
                self._waiting[job_id] = None
                self._ready.notify()

    def unheld(self, job_ids: Sequence[str]) -> list[str]:
        with self._lock:
            return [job_id for job_id in job_ids if job_id not in self._waiting]

    def _take(self) -> str | None:
        """The waiting job to run next, by its owner's turn now
        (:func:`~ragloom_app.jobs.turns.first_in_line`); ``None`` once the queue closes."""
        while True:
            with self._ready:
                while not self._waiting and not self._closing:
                    self._ready.wait()
                if self._closing:
                    return None
                waiting = list(self._waiting)
            chosen = _first(self._runner.store.engine, waiting)  # the database, unlocked
            with self._ready:
                if chosen in self._waiting:  # else another thread took it meanwhile
                    del self._waiting[chosen]
                    return chosen

    def _work(self) -> None:
        while (job_id := self._take()) is not None:
            if self._runner.handing_back.is_set():
                continue  # closing: left queued for the next start, and not claimed
            try:
                self._runner.run(job_id)
                with self._lock:
                    self._failed.discard(job_id)
            except Exception:
                # The database away (or a bug). A job claimed before it failed is taken
                # back by the sweeper once its heartbeat stops; one it could not even claim
                # is still queued, and only this process knew to run it: the sweeper's
                # next turn submits it again (a claim takes a job once, so a second try
                # never runs it twice). Said with its trace once per job, not every turn.
                with self._lock:
                    again = job_id in self._failed
                    self._failed.add(job_id)
                    self._retry.add(job_id)
                logger.log(
                    logging.DEBUG if again else logging.ERROR,
                    "job %s: the worker failed; it is tried again at the next sweep",
                    job_id,
                    exc_info=not again,
                )

    def _resubmit(self) -> None:
        """Submit again the jobs that failed before they could be claimed."""
        with self._lock:
            jobs, self._retry = sorted(self._retry), set()
        for job_id in jobs:
            self.submit(job_id)

    def close(self) -> None:
        """Stop, handing the running jobs back to the queue uncounted (a graceful stop of
        ``ragloom serve`` is no dead worker): between two files, or, for a file not done
        within HAND_BACK_WAIT_SECONDS, at once (the process is about to end; that file's
        own attempt is taken back at exit, :mod:`~ragloom_app.index.file.attempts`)."""
        self._sweeper.stop()
        self._runner.handing_back.set()
        self._runner.stopping.set()  # a job waiting for the database gives up
        with self._ready:
            self._closing = True
            self._ready.notify_all()
        deadline = time.monotonic() + HAND_BACK_WAIT_SECONDS
        for thread in self._threads:
            thread.join(timeout=max(deadline - time.monotonic(), 0.0))
        self._runner.hand_back_running()


class ProcrastinateJobQueue(JobQueue):
    """Defers each job as a procrastinate task in the app's PostgreSQL database.

    The workers' sweepers clean the staged uploads; the HTTP API's upload folders that a
    killed app process left are its own to clean, as it starts again: on a machine of its
    own, no worker shares them."""

    def __init__(self, app: BaseApp) -> None:
        self._app = app
        self._procrastinate = procrastinate_app(app)
        self._procrastinate.open()
        try:
            remove_leftover_api_uploads(app.settings.data_dir)
        except Exception:  # its own trouble must not keep uploads from being queued
            logger.warning("removing leftover API upload folders failed", exc_info=True)

    def submit(self, job_id: str) -> None:
        from procrastinate.exceptions import AlreadyEnqueued

        # The job's id is its queueing lock: procrastinate keeps one task of it waiting.
        task = self._procrastinate.tasks[TASK_NAME]
        with contextlib.suppress(AlreadyEnqueued):  # last until its place is set just below
            task.configure(queueing_lock=job_id, priority=_LAST).defer(job_id=job_id)
        refresh_turns(self._app)

    def unheld(self, job_ids: Sequence[str]) -> list[str]:
        if not job_ids:
            return []
        # The tasks waiting for a worker ('todo'), by their queueing lock: the job's id.
        query = text(
            "SELECT queueing_lock FROM procrastinate_jobs"
            " WHERE status = 'todo' AND queueing_lock = ANY(:ids)"
        )
        with self._app.engine.connect() as connection:
            held = set(connection.execute(query, {"ids": list(job_ids)}).scalars())
        return [job_id for job_id in job_ids if job_id not in held]

    def refresh_turns(self) -> None:
        """Give the tasks waiting their jobs' turns now (a worker's sweeper, each turn)."""
        refresh_turns(self._app)

    def close(self) -> None:
        self._procrastinate.close()


def _first(engine: Engine, job_ids: list[str]) -> str:
    """Of ``job_ids``, the one to run first by turns; the first submitted when the
    database cannot say (or none is waiting any more: the runner finds it so)."""
    try:
        return first_in_line(engine, job_ids) or job_ids[0]
    except Exception:
        logger.warning("the turns of the waiting jobs could not be read; the oldest goes first")
        return job_ids[0]


def refresh_turns(app: BaseApp) -> None:
    """:func:`~ragloom_app.jobs.turns.refresh_priorities`; a failure (the database away)
    is logged, and the next job's end or sweep tries again."""
    try:
        refresh_priorities(app.engine)
    except Exception:
        logger.warning("the turns of the waiting jobs could not be set", exc_info=True)


def conninfo(database_url: str) -> str:
    """The libpq connection string of a SQLAlchemy PostgreSQL URL."""
    url = make_url(database_url)
    if url.get_backend_name() != "postgresql":
        raise ValueError(
            "JOB_QUEUE = 'procrastinate' keeps its jobs in the app database, which must then "
            f"be PostgreSQL (DATABASE_URL), not {url.get_backend_name()}"
        )
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def procrastinate_app(app: BaseApp, stopping: threading.Event | None = None) -> procrastinate.App:
    """A procrastinate app on the app database, its schema made once, with the task that
    runs a job registered (the worker runs it; the app process only defers it).
    ``stopping`` is the worker's (see :class:`~ragloom_app.jobs.runner.JobRunner`)."""
    import procrastinate

    # First: it refuses a database that is not PostgreSQL in words, where the schema's
    # PostgreSQL statements failed with a traceback.
    broker = conninfo(app.settings.database)
    ensure_schema(app)
    connector = procrastinate.PsycopgConnector(conninfo=broker, timeout=BROKER_WAIT_SECONDS)
    queue_app = procrastinate.App(connector=connector)
    runner = JobRunner(app, worker_name("worker"), stopping)

    @queue_app.task(name=TASK_NAME, queue=QUEUE_NAME)
    def index_job(job_id: str) -> None:
        try:
            runner.run(job_id)
        finally:
            # The owner's next jobs move up a turn now that this one is over.
            refresh_turns(app)

    return queue_app


def ensure_schema(app: BaseApp) -> None:
    """Make procrastinate's tables in the app database if they are not there, one process
    at a time (its ``apply_schema`` is not idempotent)."""
    import procrastinate

    with app.engine.connect() as connection:
        connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _SCHEMA_LOCK})
        try:
            exists = connection.execute(
                text("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")
            ).scalar()
            if not exists:
                schema = procrastinate.schema.SchemaManager.get_schema()
                # Through psycopg itself, without parameters: the schema holds '%' signs.
                connection.connection.driver_connection.execute(schema)  # type: ignore[union-attr]
                connection.commit()
                logger.info("made procrastinate's tables in the app database")
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _SCHEMA_LOCK})
            connection.commit()
