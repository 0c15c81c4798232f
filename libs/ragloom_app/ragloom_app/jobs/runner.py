"""Run one indexing job: claim it, index its files, record progress, heed a cancel.

The same code runs in the app's own threads (the in-process queue) and in ``ragloom
worker`` processes (the procrastinate queue): a queue only decides *where*
:meth:`JobRunner.run` is called. While it runs, a heartbeat thread renews the job's
``heartbeat_at``; a job whose heartbeat stops (its process was killed) is taken again by
the next worker, from the start: files indexed before come back ``skipped`` (same
content), and the file that was cut short is indexed again, as its source row still says
``indexing`` and no live process holds its lock (:mod:`ragloom_app.index.file.worklock`).
A job the database (PostgreSQL) went away under is run again the same way by its own
worker, as soon as the database is back, rather than once its heartbeat is stale.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from ragloom.postgres_outage import outage_words
from ragloom_app.db.models import IndexingJob, JobStatus
from ragloom_app.errors import UserFacingError, user_error
from ragloom_app.index.base import BaseIndex, FileOutcome, IndexingProgress
from ragloom_app.index.file.archives import reported_name
from ragloom_app.jobs.progress import Heartbeat, Tally
from ragloom_app.jobs.staging import discard_staging, staging_dir
from ragloom_app.jobs.store import JobStore
from ragloom_app.jobs.view import FINAL

if TYPE_CHECKING:
    from ragloom_app.app import BaseApp

__all__ = [
    "MAX_JOB_ATTEMPTS",
    "MAX_OUTAGE_RERUNS",
    "OUTAGE_WAIT_SECONDS",
    "ClaimLostError",
    "JobRunner",
    "worker_name",
]

logger = logging.getLogger(__name__)

MAX_JOB_ATTEMPTS = 3
"""Starts of a job (its workers dying under it) after which it is failed, not taken again."""
OUTAGE_WAIT_SECONDS = 120.0
"""How long a worker waits for its database to come back after it went away under a job;
past that the job is left to the sweeper, which takes it once its heartbeat is stale."""
MAX_OUTAGE_RERUNS = 3
"""Times a worker runs a job again itself after the database went away under it."""
_PROGRESS_EVERY = 0.5  # seconds between two progress writes of one job
_OUTAGE_POLL_SECONDS = 1.0  # how often a worker waiting for its database asks again


class ClaimLostError(RuntimeError):
    """This run's claim of the job was taken back by a sweeper (its heartbeat looked
    stale) and the job claimed again: the run stops, leaving the job to the new claim."""


def worker_name(label: str = "app") -> str:
    """A name that tells which process runs a job: ``host:pid:label``."""
    return f"{socket.gethostname()}:{os.getpid()}:{label}"


class JobRunner:
    """Runs jobs of one app (its indices, its database) as worker ``worker``.

    ``stopping``, once set, says the worker's process is asked to stop: a job the database
    went away under is then not waited for, but left to the sweepers at once.
    ``handing_back``, once set, says it stops without finishing its jobs (``ragloom
    serve``'s own threads): each running job is put back in the queue between two files,
    its claim not counted (:meth:`JobStore.hand_back`), as it is no dead worker's.
    """

    def __init__(self, app: BaseApp, worker: str, stopping: threading.Event | None = None):
        self.app = app
        self.worker = worker
        self.store = JobStore(app.engine)
        self.stopping = stopping if stopping is not None else threading.Event()
        self.handing_back = threading.Event()
        self._claims: dict[str, int] = {}  # job id -> attempt, of the jobs running now
        self._claims_lock = threading.Lock()

    @property
    def stall_seconds(self) -> float:
        """Heartbeat silence after which a running job counts as abandoned."""
        return float(self.app.settings.job_stall_seconds)

    def run(self, job_id: str) -> JobStatus | None:
        """Run the job if this worker can claim it; its final state, or ``None`` if it was
        not this worker's to run (taken by another, finished, cancelled, unknown)."""
        attempts = self.store.claim(job_id, self.worker, self.stall_seconds)
        if attempts is None:
            return None
        # Known from the claim on, so that a stop hands it back whatever the run is at.
        with self._claims_lock:
            self._claims[job_id] = attempts
        try:
            return self._run_claim(job_id, attempts)
        finally:
            with self._claims_lock:
                # Only this claim's entry: a claim taken back from this run (a stall) and
                # made again by another thread of this runner holds the job now.
                if self._claims.get(job_id) == attempts:
                    del self._claims[job_id]

    def _run_claim(self, job_id: str, attempts: int) -> JobStatus | None:
        """Run the job this worker has just claimed for the attempts-th time."""
        row = self.store.row(job_id)
        if row is None:  # deleted with its index just now
            return None
        row.attempts = attempts  # this claim's, whatever happened to the row since
        if row.attempts > MAX_JOB_ATTEMPTS:
            if not self.store.finish(
                job_id,
                JobStatus.FAILED,
                worker=self.worker,
                attempts=row.attempts,
                error=f"its worker stopped {row.attempts - 1} times while running it",
            ):
                return None
            discard_staging(self.app.settings.data_dir, job_id)
            return JobStatus.FAILED
        logger.info("job %s: %d files, run by %s", job_id, row.files_total, self.worker)
        with self._heartbeat(row):
            status = self._run_through_outages(row)
        # Only the claim that ended the job removes its upload: a claim taken back from
        # this one (a stall) may still be reading it.
        if status in FINAL:
            discard_staging(self.app.settings.data_dir, job_id)
        return status

    def hand_back_running(self) -> list[str]:
        """Hand back every job this runner still runs (the process stops before they got
        between two files); the ids handed back. Their runs stop at their next write."""
        with self._claims_lock:
            claims = dict(self._claims)
        handed = [
            job
            for job, attempt in claims.items()
            if self.store.hand_back(job, self.worker, attempt)
        ]
        for job_id in handed:
            logger.warning("job %s: handed back to the queue in the middle of a file", job_id)
        return handed

    def _run_through_outages(self, row: IndexingJob) -> JobStatus | None:
        """Run the claimed job; when the database goes away under it, run it again from
        the start once the database is back, if this claim still holds and no cancel was
        asked for, at most MAX_OUTAGE_RERUNS times (then the sweeper takes it, counting
        an attempt: a job whose writes bring the server down again is not run for ever)."""
        reruns = 0
        while True:
            tally = Tally()
            try:
                return self._run_claimed(row, tally)
            except Exception as exc:
                words = outage_words(exc)
                if words is None or reruns >= MAX_OUTAGE_RERUNS:
                    raise
                logger.warning("job %s: the database went away (%s); waiting", row.id, words)
                held = self._held_once_back(row)
                if held is None:
                    raise  # not back in time: the sweeper takes the job once it is
            if not held:
                # Finished (its last write went through), or taken back and claimed again.
                current = self.store.row(row.id)
                return current.status if current is not None and current.status in FINAL else None
            if self.store.cancel_requested(row.id):
                outcomes = tally.outcomes + self._finish_cut_short(row)
                return self._cancelled(row, Tally(outcomes=outcomes))
            reruns += 1
            logger.info("job %s: the database is back; running the job again", row.id)

    def _finish_cut_short(self, row: IndexingJob) -> list[dict[str, Any]]:
        """Finish the files the outage cut short, as a cancel lets the file it is on
        finish; the outcomes of the job's own. Left alone, they would wait, shown queued,
        for the next start of a worker or of ``ragloom serve`` (the index's recovery)."""
        try:
            recovered = self.app.indices.get(row.index_id).recover()
        except Exception:  # the index deleted, the database gone again: left to a start
            logger.warning("job %s: finishing its interrupted files failed", row.id, exc_info=True)
            return []
        names = _reported_names(row)
        return [
            outcome.to_dict()
            for outcome in recovered
            if any(_reports(outcome.name, name) for name in names)
        ]

    def _held_once_back(self, row: IndexingJob) -> bool | None:
        """Whether this claim of the job still holds once the database answers again (its
        heartbeat renewed), or ``None`` if it did not answer within OUTAGE_WAIT_SECONDS
        or the worker was asked to stop meanwhile."""
        deadline = time.monotonic() + OUTAGE_WAIT_SECONDS
        while time.monotonic() < deadline:
            if self.stopping.wait(_OUTAGE_POLL_SECONDS):
                logger.warning("job %s: the worker is stopping; left to the sweepers", row.id)
                return None
            try:
                return self.store.heartbeat(row.id, self.worker, attempts=row.attempts)
            except Exception as exc:
                if outage_words(exc) is None:
                    raise
        return None

    def _run_claimed(self, row: IndexingJob, tally: Tally | None = None) -> JobStatus | None:
        """Run the job under this claim, keeping ``tally`` (if given); its final state,
        or ``None`` if the claim was lost (the job taken back by a sweeper) before this
        run could end it."""
        tally = tally if tally is not None else Tally()
        try:
            index = self.app.indices.get(row.index_id)
        except KeyError:
            name = self.app.indices.stored_name(row.index_id)
            if name is not None:  # there, but not started in this process
                return self._index_unavailable(row, name)
            self.store.finish(row.id, JobStatus.FAILED, error="its index was deleted")
            return JobStatus.FAILED  # whoever holds it: nobody can run it
        try:
            # Closed at once on a cancel: files the pipeline holds unreported are taken out.
            with contextlib.closing(self._events(index, row)) as events:
                for event in events:
                    if isinstance(event, IndexingProgress):
                        self._record(row, tally, event.name, fraction=event.fraction)
                    else:
                        tally.outcomes.append(event.to_dict())
                        self._record(row, tally, event.name, outcome=True)
                    # Only where the upload holds no file unreported: between files (the
                    # file just done is recorded with its outcome), or while it waits.
                    between = not isinstance(event, IndexingProgress) or event.waiting
                    if between and self.store.cancel_requested(row.id):
                        events.close()
                        return self._cancelled(row, tally)
                    if self.handing_back.is_set():
                        # At any event, not only between files: the files the upload
                        # holds unreported are taken out as the events close, and the
                        # next claim indexes them (a group may hold 30 s of files).
                        events.close()
                        return self._handed_back(row, tally)
        except ClaimLostError:
            # Taken back by a sweeper (this worker stalled past JOB_STALL_SECONDS: a
            # machine asleep, a process paused) and claimed again: the new claim runs the
            # job from the start. The files this run holds unreported were taken out as
            # its events were closed; the new claim, which waits for such files, then
            # indexes them (or, past its wait, fails them with the reason).
            logger.warning("job %s was taken from %s; it stops", row.id, self.worker)
            return None
        except Exception as exc:
            if outage_words(exc) is not None:
                raise  # the database went away, not the job's fault: tried again above
            failure = user_error(exc, f"Indexing into {index.name!r}", log=logger)
            if not self.store.finish(
                row.id,
                JobStatus.FAILED,
                worker=self.worker,
                attempts=row.attempts,
                error=failure.message,
                **tally.final(),
            ):
                return None
            return JobStatus.FAILED
        if not self.store.finish(
            row.id,
            JobStatus.DONE,
            worker=self.worker,
            attempts=row.attempts,
            **tally.final(),
        ):
            logger.warning("job %s was taken from %s before it finished", row.id, self.worker)
            return None
        return JobStatus.DONE

    def _events(
        self, index: BaseIndex, row: IndexingJob
    ) -> Generator[IndexingProgress | FileOutcome, None, None]:
        if row.kind == "reindex":
            for position, entry in enumerate(row.files):
                yield IndexingProgress(
                    str(entry["name"]), position / max(row.files_total, 1), "indexing"
                )
                outcome = index.reindex_source(str(entry["source_id"]))
                yield outcome or FileOutcome(str(entry["name"]), "failed", reason="no such file")
            return
        folder = staging_dir(self.app.settings.data_dir, row.id)
        paths = [folder / str(entry["path"]) for entry in row.files]
        names = [str(entry["name"]) for entry in row.files]
        missing = [name for path, name in zip(paths, names, strict=True) if not path.is_file()]
        if missing:
            raise UserFacingError(
                f"the staged upload is gone ({len(missing)} of {len(paths)} files, e.g. "
                f"{missing[0]!r}): is the data folder's 'jobs' folder shared with the workers?"
            )
        # A job begun before (its worker died under it): the file that was cut short then
        # keeps the count of the attempts it cost, whose bound a new start would undo.
        resumed_since = row.created_at if row.attempts > 1 else None
        settings = {"owner": row.owner, "resumed_since": resumed_since}
        yield from index.get_indexing_pipeline(settings).stream(paths, names=names)

    def _record(
        self,
        row: IndexingJob,
        tally: Tally,
        current: str,
        *,
        fraction: float | None = None,
        outcome: bool = False,
    ) -> None:
        """Write how far the job is, at most every _PROGRESS_EVERY seconds, with its
        outcomes when enough new ones are due (:meth:`Tally.due`), at once if this is
        an ``outcome``'s; the rest are written as the job ends."""
        if fraction is not None:
            tally.fraction = fraction
        now = time.monotonic()
        outcomes = tally.due()
        if now - tally.last_write < _PROGRESS_EVERY and not (outcome and outcomes is not None):
            return
        tally.last_write = now
        if not self.store.progress(
            row.id,
            self.worker,
            attempts=row.attempts,
            fraction=tally.fraction,
            current=current,
            outcomes=outcomes,
            files_done=len(tally.outcomes),
        ):
            raise ClaimLostError(row.id)
        if outcomes is not None:
            tally.written = len(outcomes)

    def _handed_back(self, row: IndexingJob, tally: Tally) -> JobStatus | None:
        """Put the job back in the queue as the process stops (see ``handing_back``):
        the next claim runs it from the start, the files indexed so far then skipped."""
        if self.store.hand_back(row.id, self.worker, row.attempts):
            logger.info(
                "job %s: handed back to the queue after %d files", row.id, len(tally.outcomes)
            )
            return None
        if self.store.cancel_requested(row.id):  # asked just now: cancelled, not handed back
            return self._cancelled(row, tally)
        return None  # taken back meanwhile

    def _index_unavailable(self, row: IndexingJob, index_name: str) -> JobStatus | None:
        """The job's index exists but failed to start in this process (its store away as
        it started, say): the job is handed back to the queue with its upload, its claim
        counted, for the sweepers to submit again once it has waited JOB_STALL_SECONDS,
        to this worker (whose next look at the indices starts the index again,
        :data:`~ragloom_app.index.manager.START_RETRY_SECONDS`) or another. Its
        MAX_JOB_ATTEMPTS-th claim that finds it so fails it, with the index's reason."""
        reason = self.app.indices.unavailable.get(index_name, "it is not started here")
        if row.attempts >= MAX_JOB_ATTEMPTS:
            error = f"its index could not be started ({row.attempts} tries): {reason}"
            if self.store.finish(
                row.id, JobStatus.FAILED, worker=self.worker, attempts=row.attempts, error=error
            ):
                return JobStatus.FAILED
            return None  # taken back meanwhile
        if self.store.hand_back(row.id, self.worker, row.attempts, counted=True):
            logger.warning(
                "job %s: its index %r is unavailable here (%s); handed back to the queue",
                row.id,
                index_name,
                reason,
            )
            return None
        if self.store.cancel_requested(row.id):  # asked just now: cancelled, not handed back
            return self._cancelled(row, Tally())
        return None  # taken back meanwhile

    def _cancelled(self, row: IndexingJob, tally: Tally) -> JobStatus | None:
        left = _unreported(_reported_names(row), tally.outcomes)
        not_done = [
            {
                "file": name,
                "status": "cancelled",
                "chunks": 0,
                "reason": "the job was cancelled",
                "source_id": None,
            }
            for name in left
        ]
        if not self.store.finish(
            row.id,
            JobStatus.CANCELLED,
            worker=self.worker,
            attempts=row.attempts,
            error="cancelled by its owner; the files indexed before stay indexed",
            **tally.final(not_done),
        ):
            return None  # taken back meanwhile: the new claim sees the cancel
        logger.info("job %s cancelled after %d files", row.id, len(tally.outcomes))
        return JobStatus.CANCELLED

    # -- heartbeat -------------------------------------------------------------------------
    def _heartbeat(self, row: IndexingJob) -> Heartbeat:
        every = max(self.stall_seconds / 4, 0.25)
        return Heartbeat(self.store, row.id, self.worker, row.attempts, every)


def _reported_names(row: IndexingJob) -> list[str]:
    """The job's files by the names their outcomes are reported under: an upload's as the
    pipeline shows them (a raw name may hold a NUL, which PostgreSQL refuses), a
    reindex's as its sources are named already."""
    names = [str(entry["name"]) for entry in row.files]
    return [reported_name(name) for name in names] if row.kind == "add" else names


def _reports(outcome_name: str, file_name: str) -> bool:
    """Whether an outcome is of the uploaded file ``file_name``: the file itself, or a
    member of it, an archive (named ``archive/member``)."""
    return outcome_name == file_name or outcome_name.startswith(f"{file_name}/")


def _unreported(names: list[str], outcomes: list[dict[str, Any]]) -> list[str]:
    """The uploaded files (by shown name, in order) that no outcome is of. Two files of
    one name (from two folders) take two outcomes; an archive takes one of its members'."""
    left = list(names)
    for outcome in outcomes:
        exact = [i for i, name in enumerate(left) if name == outcome["file"]]
        found = exact or [i for i, name in enumerate(left) if _reports(outcome["file"], name)]
        if found:
            del left[found[0]]
    return left
