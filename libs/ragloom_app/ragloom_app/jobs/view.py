"""A job as its owner sees it (:class:`JobView`), and the states it moves through."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ragloom_app.db.models import IndexingJob, JobStatus

__all__ = ["ACTIVE", "FINAL", "MAX_JOB_OUTCOMES", "JobView"]

MAX_JOB_OUTCOMES = 1000
"""Outcomes one job records (the first ones): past them, files are counted in
``files_done`` only. Every file of a job may be an archive of thousands of members, and
its outcomes are rewritten as they grow: without a cap, one job's row could grow to
hundreds of megabytes (a 97 KB zip of 1,000 failing members made 101 MB of writes)."""

ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)
"""States in which a job still has work to do."""
FINAL = (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED)
"""States a job never leaves."""


@dataclass(frozen=True)
class JobView:
    """A job as its owner sees it: what it indexes, how far it is, and what came of it."""

    id: str
    index_id: int
    owner: str
    kind: str
    status: JobStatus
    files_total: int
    files_done: int
    fraction: float
    current: str | None
    error: str | None
    cancel_requested: bool
    worker: str | None
    attempts: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    names: list[str] = field(default_factory=list)
    outcomes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        """Whether the job is in a final state."""
        return self.status in FINAL

    @property
    def outcomes_not_listed(self) -> int:
        """Files done whose outcome is not in :attr:`outcomes`: those past
        :data:`MAX_JOB_OUTCOMES` and, while the job runs, those not written yet (a running
        job writes its outcomes in batches). Of a view read with its outcomes only."""
        return max(self.files_done - len(self.outcomes), 0)

    @classmethod
    def of(cls, row: IndexingJob, *, with_outcomes: bool = True) -> JobView:
        """The view of a database row; without its outcomes (left unread, ``[]``) unless
        ``with_outcomes``."""
        return cls(
            id=row.id,
            index_id=row.index_id,
            owner=row.owner,
            kind=row.kind,
            status=JobStatus(row.status),
            files_total=row.files_total,
            files_done=row.files_done,
            fraction=row.fraction,
            current=row.current,
            error=row.error,
            cancel_requested=row.cancel_requested,
            worker=row.worker,
            attempts=row.attempts,
            created_at=row.created_at,
            started_at=row.started_at,
            finished_at=row.finished_at,
            names=[str(f.get("name", "")) for f in row.files or []],
            outcomes=list(row.outcomes or []) if with_outcomes else [],
        )
