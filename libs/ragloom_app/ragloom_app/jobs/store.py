"""The rows of indexing jobs: every change of a job's state is one conditional UPDATE.

A job moves ``queued`` -> ``running`` -> ``done`` | ``failed`` | ``cancelled``, and back
from ``running`` to ``queued`` when its worker died (its heartbeat stopped). Each move
names the state it starts from, so two workers, a sweeper and a cancelling user racing on
one job never both win: whichever UPDATE matches first does, the others change nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import case, func, literal, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import defer
from sqlmodel import Session, col, select

from ragloom_app.db.models import IndexingJob, JobStatus
from ragloom_app.jobs.admission import active_jobs_count, admit
from ragloom_app.jobs.view import ACTIVE, FINAL, JobView

__all__ = ["ACTIVE", "DELETED_INDEX", "FINAL", "JobStore", "JobView"]

# The status column's own type: a literal status is then stored as the column stores it.
_STATUS_TYPE = IndexingJob.__table__.c.status.type  # type: ignore[attr-defined]
DELETED_INDEX = 0
"""The index id of the jobs of a deleted index (no index has it: ids start at 1)."""
_IDS_PER_QUERY = 500  # ids bound in one IN list (PostgreSQL's driver takes 65,535 at most)


def _now() -> datetime:
    return datetime.now(UTC)


def _stalled(stall_seconds: float, *, cancel_asked: bool) -> tuple[Any, ...]:
    """The conditions of a running job whose heartbeat is ``stall_seconds`` old, with or
    without a cancel asked."""
    cutoff = _now() - timedelta(seconds=stall_seconds)
    return (
        col(IndexingJob.status) == JobStatus.RUNNING,
        col(IndexingJob.heartbeat_at) < cutoff,
        col(IndexingJob.cancel_requested).is_(cancel_asked),
    )


class JobStore:
    """Reads and changes the ``indexing_jobs`` table of one database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # -- reading ---------------------------------------------------------------------------
    def get(self, job_id: str) -> JobView | None:
        """The job, or ``None`` if there is none of that id."""
        with Session(self.engine) as session:
            row = session.get(IndexingJob, job_id)
            return JobView.of(row) if row is not None else None

    def statuses(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """The status of each of ``job_ids`` that exists."""
        found: dict[str, JobStatus] = {}
        with Session(self.engine) as session:
            for start in range(0, len(job_ids), _IDS_PER_QUERY):
                part = list(job_ids[start : start + _IDS_PER_QUERY])
                query = select(IndexingJob.id, IndexingJob.status).where(
                    col(IndexingJob.id).in_(part)
                )
                found.update((job_id, JobStatus(status)) for job_id, status in session.exec(query))
        return found

    def row(self, job_id: str) -> IndexingJob | None:
        """The job's row itself (its staged ``files`` included), or ``None``."""
        with Session(self.engine) as session:
            row = session.get(IndexingJob, job_id)
            if row is not None:
                session.expunge(row)
            return row

    def jobs(
        self,
        owner: str | None = None,
        *,
        index_id: int | None = None,
        statuses: Sequence[JobStatus] | None = None,
        limit: int = 50,
        with_outcomes: bool = True,
    ) -> list[JobView]:
        """Jobs, newest first: of ``owner`` (everyone's if ``None``), of an index, in
        some ``statuses``; their outcomes (up to MAX_JOB_OUTCOMES each) not even read
        unless ``with_outcomes``."""
        query = select(IndexingJob).order_by(col(IndexingJob.created_at).desc()).limit(limit)
        if not with_outcomes:
            query = query.options(defer(IndexingJob.outcomes))  # type: ignore[arg-type]
        if owner is not None:
            query = query.where(IndexingJob.owner == owner)
        if index_id is not None:
            query = query.where(IndexingJob.index_id == index_id)
        if statuses is not None:
            query = query.where(col(IndexingJob.status).in_(list(statuses)))
        with Session(self.engine) as session:
            return [JobView.of(row, with_outcomes=with_outcomes) for row in session.exec(query)]

    def count_active(self, *, owner: str | None = None, index_id: int | None = None) -> int:
        """Jobs queued or running, of ``owner`` or of an index."""
        with Session(self.engine) as session:
            return int(session.exec(active_jobs_count(owner=owner, index_id=index_id)).one())

    def stalled(self, stall_seconds: float) -> list[str]:
        """Running jobs whose worker sent no heartbeat for ``stall_seconds``."""
        cutoff = _now() - timedelta(seconds=stall_seconds)
        query = select(IndexingJob.id).where(
            IndexingJob.status == JobStatus.RUNNING, col(IndexingJob.heartbeat_at) < cutoff
        )
        with Session(self.engine) as session:
            return list(session.exec(query))

    def waiting(self, stall_seconds: float) -> list[str]:
        """Jobs queued (first, or again after their worker died) at least ``stall_seconds``
        ago, oldest first: those a queue may never have been handed, which the sweeper
        submits again (a submission of a job still waiting in its queue is a no-op)."""
        cutoff = _now() - timedelta(seconds=stall_seconds)
        touched = func.coalesce(col(IndexingJob.heartbeat_at), col(IndexingJob.created_at))
        query = (
            select(IndexingJob.id)
            .where(
                IndexingJob.status == JobStatus.QUEUED,
                touched < cutoff,
                col(IndexingJob.cancel_requested).is_(False),
            )
            .order_by(col(IndexingJob.created_at))
        )
        with Session(self.engine) as session:
            return list(session.exec(query))

    # -- changing --------------------------------------------------------------------------
    def create(
        self,
        *,
        index_id: int,
        owner: str,
        kind: str,
        files: list[dict[str, Any]],
        job_id: str | None = None,
        active_limit: int | None = None,
        index_name: str | None = None,
    ) -> JobView:
        """A new queued job over ``files`` (see :class:`IndexingJob`), once
        :func:`~ragloom_app.jobs.admission.admit` lets it be written: its index there
        (named ``index_name``, if given), its owner under ``active_limit`` jobs queued or
        running (if given)."""
        row = IndexingJob(
            id=job_id or uuid.uuid4().hex,
            index_id=index_id,
            owner=owner,
            kind=kind,
            files=files,
            files_total=len(files),
        )
        with Session(self.engine) as session:
            admit(
                session,
                index_id=index_id,
                index_name=index_name,
                owner=owner,
                active_limit=active_limit,
            )
            session.add(row)
            session.commit()
            session.refresh(row)
            return JobView.of(row)

    def _move(self, job_id: str, *conditions: Any, **values: Any) -> bool:
        with Session(self.engine) as session:
            result = session.exec(
                update(IndexingJob)
                .where(col(IndexingJob.id) == job_id, *conditions)
                .values(**values)
            )
            session.commit()
            return bool(result.rowcount)

    def claim(self, job_id: str, worker: str, stall_seconds: float) -> int | None:
        """Take the job for ``worker``: if it is queued, or running on a worker that
        stopped its heartbeat ``stall_seconds`` ago. Its progress starts afresh. The
        claim's attempt number (what its later writes name it by), or ``None`` if the job
        was not taken: returned by the same statement, since the job may be taken back and
        claimed again before another could read it."""
        cutoff = _now() - timedelta(seconds=stall_seconds)
        now = _now()
        with Session(self.engine) as session:
            attempts = session.exec(
                update(IndexingJob)
                .where(
                    col(IndexingJob.id) == job_id,
                    (col(IndexingJob.status) == JobStatus.QUEUED)
                    | (
                        (col(IndexingJob.status) == JobStatus.RUNNING)
                        & (col(IndexingJob.heartbeat_at) < cutoff)
                    ),
                    col(IndexingJob.cancel_requested).is_(False),
                )
                .values(
                    status=JobStatus.RUNNING,
                    worker=worker,
                    started_at=now,
                    heartbeat_at=now,
                    attempts=IndexingJob.attempts + 1,
                    files_done=0,
                    fraction=0.0,
                    current=None,
                    outcomes=[],
                )
                .returning(col(IndexingJob.attempts))
            ).scalar_one_or_none()
            session.commit()
            return attempts

    def requeue_stalled(self, job_id: str, stall_seconds: float) -> bool:
        """Put a running job whose worker died back in the queue (waiting from now), unless
        its owner asked it to stop (a claim would never take it)."""
        return self._move(
            job_id,
            *_stalled(stall_seconds, cancel_asked=False),
            status=JobStatus.QUEUED,
            worker=None,
            current=None,
            heartbeat_at=_now(),
        )

    def hand_back(self, job_id: str, worker: str, attempts: int, *, counted: bool = False) -> bool:
        """Put ``worker``'s running job (its claim ``attempts``) back in the queue as its
        process stops on purpose, the claim not counted: a stop is no death of a worker
        (``MAX_JOB_ATTEMPTS``). With ``counted``, the claim counts (a worker that could
        not run the job: its tries are bounded as a dying worker's). Not a job whose
        owner asked it to stop (the worker cancels it instead). ``False`` if nothing was
        changed."""
        return self._move(
            job_id,
            *self._held_by(worker, attempts),
            col(IndexingJob.cancel_requested).is_(False),
            status=JobStatus.QUEUED,
            worker=None,
            current=None,
            attempts=attempts if counted else attempts - 1,
            heartbeat_at=_now(),
            # Its next claim runs it from the start: no progress shown meanwhile.
            files_done=0,
            fraction=0.0,
            outcomes=[],
        )

    def cancel_stalled(self, job_id: str, stall_seconds: float) -> bool:
        """Cancel a running job whose worker died and whose owner asked it to stop; only
        while its heartbeat is still stale (a live worker that claimed it meanwhile sees
        the request itself, between two files)."""
        return self._move(
            job_id,
            *_stalled(stall_seconds, cancel_asked=True),
            status=JobStatus.CANCELLED,
            error="cancelled by its owner",
            finished_at=_now(),
            current=None,
        )

    def cancel_flagged_queued(self) -> int:
        """Cancel the queued jobs whose owner asked them to stop (left so by a release
        before 2026-12-05, when a cancel could meet a sweeper): no claim takes them."""
        with Session(self.engine) as session:
            result = session.exec(
                update(IndexingJob)
                .where(
                    col(IndexingJob.status) == JobStatus.QUEUED,
                    col(IndexingJob.cancel_requested).is_(True),
                )
                .values(
                    status=JobStatus.CANCELLED,
                    finished_at=_now(),
                    current=None,
                    error="cancelled by its owner before it started",
                )
            )
            session.commit()
            return int(result.rowcount or 0)

    @staticmethod
    def _held_by(worker: str, attempts: int | None) -> list[Any]:
        """The conditions for a running job held by ``worker``; with ``attempts``, by that
        claim of it (every claim counts one more attempt): the same worker name may claim
        it again, from another thread, once a sweeper took it back from a stalled one."""
        conditions = [
            col(IndexingJob.status) == JobStatus.RUNNING,
            col(IndexingJob.worker) == worker,
        ]
        if attempts is not None:
            conditions.append(col(IndexingJob.attempts) == attempts)
        return conditions

    def heartbeat(self, job_id: str, worker: str, attempts: int | None = None) -> bool:
        """Say ``worker`` (its claim ``attempts``) still runs the job; ``False`` if it no
        longer holds it."""
        return self._move(job_id, *self._held_by(worker, attempts), heartbeat_at=_now())

    def progress(
        self,
        job_id: str,
        worker: str,
        *,
        fraction: float,
        current: str | None,
        outcomes: list[dict[str, Any]] | None = None,
        files_done: int | None = None,
        attempts: int | None = None,
    ) -> bool:
        """Record how far the job is (and its outcomes so far); renews the heartbeat.
        ``False`` if ``worker`` (its claim ``attempts``) no longer holds the job."""
        values: dict[str, Any] = {
            "fraction": min(max(fraction, 0.0), 1.0),
            "current": current,
            "heartbeat_at": _now(),
        }
        if outcomes is not None:
            values["outcomes"] = outcomes
        if files_done is not None:
            values["files_done"] = files_done
        return self._move(job_id, *self._held_by(worker, attempts), **values)

    def finish(
        self,
        job_id: str,
        status: JobStatus,
        *,
        worker: str | None = None,
        error: str | None = None,
        outcomes: list[dict[str, Any]] | None = None,
        attempts: int | None = None,
        files_done: int | None = None,
    ) -> bool:
        """Move an active job to a final ``status``: only ``worker``'s running job (its
        claim ``attempts``), if given. ``False`` if it was not moved. ``files_done``
        defaults to the number of ``outcomes``, if given."""
        conditions: list[Any] = [col(IndexingJob.status).in_(list(ACTIVE))]
        if worker is not None:
            conditions = self._held_by(worker, attempts)
        values: dict[str, Any] = {
            "status": status,
            "error": error,
            "finished_at": _now(),
            "current": None,
        }
        if status == JobStatus.DONE:
            values["fraction"] = 1.0
        if outcomes is not None:
            values["outcomes"] = outcomes
            values["files_done"] = len(outcomes)
        if files_done is not None:
            values["files_done"] = files_done
        return self._move(job_id, *conditions, **values)

    def request_cancel(self, job_id: str) -> JobStatus | None:
        """Cancel a queued job at once, ask a running one to stop; the job's state after
        (``None`` if there is no such job)."""
        # One statement, so that no move of the job's between two (a sweeper queueing it
        # again, a worker claiming it) can lose the cancel.
        queued = col(IndexingJob.status) == JobStatus.QUEUED
        self._move(
            job_id,
            col(IndexingJob.status).in_([JobStatus.QUEUED, JobStatus.RUNNING]),
            cancel_requested=True,
            status=case(
                (queued, literal(JobStatus.CANCELLED, _STATUS_TYPE)),
                else_=col(IndexingJob.status),
            ),
            finished_at=case((queued, _now()), else_=col(IndexingJob.finished_at)),
            error=case(
                (queued, "cancelled by its owner before it started"),
                else_=col(IndexingJob.error),
            ),
        )
        job = self.get(job_id)
        return job.status if job is not None else None

    def detach_index(self, index_id: int, session: Session) -> None:
        """In ``session`` (the index's deletion): fail the index's active jobs, saying why,
        and point all of its jobs at :data:`DELETED_INDEX`. A later index may get its id
        (SQLite gives the highest again): a job left pointing at it would run into that
        index, and show its name to the job's owner. The jobs stay their owners' history;
        a worker still running one stops at its next write, which no longer matches."""
        ended = {"status": JobStatus.FAILED, "error": "its index was deleted"}
        session.exec(
            update(IndexingJob)
            .where(col(IndexingJob.index_id) == index_id, col(IndexingJob.status).in_(list(ACTIVE)))
            .values(**ended, finished_at=_now(), current=None)
        )
        session.exec(
            update(IndexingJob)
            .where(col(IndexingJob.index_id) == index_id)
            .values(index_id=DELETED_INDEX)
        )

    def delete_finished(self, owner: str) -> int:
        """Delete ``owner``'s finished jobs (their file names and outcomes); how many."""
        with Session(self.engine) as session:
            rows = list(
                session.exec(
                    select(IndexingJob).where(
                        IndexingJob.owner == owner, col(IndexingJob.status).in_(list(FINAL))
                    )
                )
            )
            for row in rows:
                session.delete(row)
            session.commit()
            return len(rows)

    def cancel_requested(self, job_id: str) -> bool:
        """Whether someone asked the job to stop."""
        with Session(self.engine) as session:
            row = session.get(IndexingJob, job_id)
            return row is None or row.cancel_requested
