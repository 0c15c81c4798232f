"""A job as its owner sees it (:class:`JobView`), and the states it moves through."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ragloom_app.db.models import IndexingJob, JobStatus

__all__ = ["ACTIVE", "FINAL", "JobView"]

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

    @classmethod
    def of(cls, row: IndexingJob) -> JobView:
        """The view of a database row."""
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
            outcomes=list(row.outcomes or []),
        )
