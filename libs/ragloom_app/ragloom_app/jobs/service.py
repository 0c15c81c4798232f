"""What the UI, the CLI and the HTTP API ask of indexing jobs: :class:`JobService`."""

from __future__ import annotations

import logging
import shutil
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragloom.postgres_outage import outage_words
from ragloom_app.db.models import JobStatus
from ragloom_app.errors import UserFacingError, disk_full_error
from ragloom_app.index.base import BaseIndex
from ragloom_app.jobs.admission import JobLimitError
from ragloom_app.jobs.queues import InProcessJobQueue, JobQueue, ProcrastinateJobQueue
from ragloom_app.jobs.staging import discard_staging, staging_dir
from ragloom_app.jobs.store import JobStore, JobView

if TYPE_CHECKING:
    from ragloom_app.app import BaseApp

__all__ = ["JobLimitError", "JobService", "UnknownJobError"]

logger = logging.getLogger(__name__)


class UnknownJobError(UserFacingError, KeyError):
    """No job of that id that this user may see."""

    def __str__(self) -> str:
        # A KeyError's own str() is its message's repr: "no job 'x'" in quotes again.
        return str(self.args[0]) if self.args else "unknown job"


class JobService:
    """Submits, lists and cancels indexing jobs of one app; its queue starts at first use."""

    def __init__(self, app: BaseApp) -> None:
        self.app = app
        self.store = JobStore(app.engine)
        self._queue: JobQueue | None = None
        self._lock = threading.Lock()

    @property
    def queue(self) -> JobQueue:
        """The queue ``JOB_QUEUE`` names, started on first use."""
        with self._lock:
            if self._queue is None:
                if self.app.settings.job_queue == "procrastinate":
                    self._queue = ProcrastinateJobQueue(self.app)
                else:
                    self._queue = InProcessJobQueue(self.app, self.app.settings.job_workers)
            return self._queue

    def start(self) -> None:
        """Start the queue now (``ragloom serve`` does, to resume jobs left queued)."""
        _ = self.queue

    def close(self) -> None:
        """Stop the queue's threads and connections; jobs left queued stay queued."""
        with self._lock:
            if self._queue is not None:
                self._queue.close()
                self._queue = None

    # -- submitting ------------------------------------------------------------------------
    def check_room(self, owner: str) -> None:
        """Raise :class:`JobLimitError` if ``owner`` has ``MAX_JOBS_PER_USER`` jobs queued
        or running already: asked before an upload is read or staged, so that a refused
        one costs nothing. Only a first look: the job's insert counts again, one at a time
        per owner (:func:`~ragloom_app.jobs.admission.admit`)."""
        limit = self.app.settings.max_jobs_per_user
        if self.store.count_active(owner=owner) >= limit:
            raise JobLimitError(limit)

    def submit_files(
        self, index: BaseIndex, owner: str, files: Sequence[tuple[str, Path]], *, move: bool
    ) -> JobView:
        """Queue ``files`` (shown name, path) for ``index``: they are copied (or moved, if
        ``move``) into the job's staging folder first, so the caller may delete its own.
        The job's row is written only once they are all there."""
        self.check_room(owner)
        job_id = uuid.uuid4().hex
        folder = staging_dir(self.app.settings.data_dir, job_id)
        entries = []
        try:
            folder.mkdir(parents=True, mode=0o700)
            for position, (name, path) in enumerate(files):
                target = folder / str(position)  # the shown name is never a path here
                if move:
                    shutil.move(path, target)
                else:
                    shutil.copyfile(path, target)
                entries.append({"name": name, "path": str(position)})
        except OSError as exc:
            discard_staging(self.app.settings.data_dir, job_id)
            doing = "the upload could not be kept for indexing"
            full = disk_full_error(exc, doing)
            raise full or UserFacingError(f"{doing}: {exc.strerror or exc}") from exc
        try:
            job = self._create(index, owner, "add", entries, job_id)
        except Exception as exc:
            # PostgreSQL away as the row was committed: it may be written all the same
            # (the reply was lost), so the files stay for that job; the sweepers remove
            # them once it is clear that there is none (staging.py). Any other failure
            # wrote no job, and nobody would ever run or remove these files.
            if outage_words(exc) is None:
                discard_staging(self.app.settings.data_dir, job_id)
            raise
        self._hand_over(job)
        return job

    def submit_reindex(
        self, index: BaseIndex, owner: str, sources: Sequence[tuple[str, str]]
    ) -> JobView:
        """Queue indexing again the given (shown name, source id) files of ``index``."""
        self.check_room(owner)
        entries = [{"name": name, "source_id": source_id} for name, source_id in sources]
        job = self._create(index, owner, "reindex", entries)
        self._hand_over(job)
        return job

    def _create(
        self,
        index: BaseIndex,
        owner: str,
        kind: str,
        entries: list[dict[str, Any]],
        job_id: str | None = None,
    ) -> JobView:
        """The job's row, written only for ``index`` as it is now (not a later index given
        its id) and within the owner's ``MAX_JOBS_PER_USER``."""
        return self.store.create(
            job_id=job_id,
            index_id=index.id,
            index_name=index.name,
            owner=owner,
            kind=kind,
            files=entries,
            active_limit=self.app.settings.max_jobs_per_user,
        )

    def _hand_over(self, job: JobView) -> None:
        """Submit the stored job to the queue. If PostgreSQL (procrastinate's broker) went
        away just after the job's row was written, the job is not lost and the caller is
        not told it failed: the sweepers submit it once it has waited ``JOB_STALL_SECONDS``
        (:class:`~ragloom_app.jobs.queues.JobSweeper`). Any other failure (a setting, a
        bug) fails the job, saying why, and is raised."""
        try:
            self.queue.submit(job.id)  # the queue is started by the first job
        except Exception as exc:
            if outage_words(exc) is None:
                self.store.finish(
                    job.id, JobStatus.FAILED, error=f"it could not be queued: {type(exc).__name__}"
                )
                discard_staging(self.app.settings.data_dir, job.id)
                raise
            logger.warning(
                "job %s is stored but could not be queued now; the sweepers will queue it",
                job.id,
                exc_info=True,
            )

    # -- reading and cancelling ------------------------------------------------------------
    def get(self, job_id: str, user_id: str, is_admin: bool = False) -> JobView:
        """The job, if it is ``user_id``'s (or the caller is an admin)."""
        job = self.store.get(job_id)
        if job is None or not (is_admin or job.owner == user_id):
            raise UnknownJobError(f"no job {job_id!r}")
        return job

    def jobs(
        self,
        user_id: str | None,
        *,
        active_only: bool = False,
        limit: int = 50,
        with_outcomes: bool = True,
    ) -> list[JobView]:
        """A user's jobs (everyone's for ``None``), newest first; without their outcomes
        (left unread) unless ``with_outcomes``."""
        statuses = [JobStatus.QUEUED, JobStatus.RUNNING] if active_only else None
        return self.store.jobs(user_id, statuses=statuses, limit=limit, with_outcomes=with_outcomes)

    def cancel(self, job_id: str, user_id: str, is_admin: bool = False) -> JobView:
        """Cancel a queued job at once; a running one stops after the file it is on."""
        self.get(job_id, user_id, is_admin)
        status = self.store.request_cancel(job_id)
        if status == JobStatus.CANCELLED:
            discard_staging(self.app.settings.data_dir, job_id)
        return self.get(job_id, user_id, is_admin)

    def busy(self, index: BaseIndex) -> bool:
        """Whether jobs are queued or running on ``index``."""
        return self.store.count_active(index_id=index.id) > 0
