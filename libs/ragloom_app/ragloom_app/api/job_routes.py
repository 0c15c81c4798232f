"""``/api/v1/jobs``: the indexing jobs of the caller, how far each is, and cancelling one.

A job is its owner's: another user gets 404 for it, as for an index they may not read;
admins see and cancel every job (``?all=true`` lists everyone's).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from ragloom_app.accounts import User
from ragloom_app.api.errors import not_found
from ragloom_app.api.models import ERROR_RESPONSES
from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.jobs import JobView, UnknownJobError
from ragloom_app.jobs.turns import places_ahead
from ragloom_app.jobs.view import MAX_JOB_OUTCOMES

__all__ = ["JobOut", "job_out", "job_router"]

MAX_JOBS_LISTED = 200


class JobOutcomeOut(BaseModel):
    """What became of one file of a job."""

    file: str
    status: Literal["indexed", "skipped", "failed", "cancelled"]
    chunks: int = 0
    reason: str | None = None
    source_id: str | None = None


class JobOut(BaseModel):
    """An indexing job: ``queued``, ``running`` (``fraction`` done, on ``current``), then
    ``done`` (each file's outcome in ``outcomes``), ``failed`` (``error`` says why) or
    ``cancelled``."""

    id: str
    index: str | None = Field(description="The index's name; null once it was deleted.")
    kind: Literal["add", "reindex"]
    status: Literal["queued", "running", "done", "failed", "cancelled"]
    files: list[str]
    files_done: int
    fraction: float = Field(ge=0, le=1)
    current: str | None
    error: str | None
    cancel_requested: bool
    worker: str | None
    attempts: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    outcomes: list[JobOutcomeOut] | None = Field(
        description=(
            f"Each finished file's outcome, the first {MAX_JOB_OUTCOMES:,} of a job; only "
            "in GET /jobs/{job_id}: null in the list of jobs."
        )
    )
    outcomes_not_listed: int | None = Field(
        description=(
            "Files done whose outcome is not in `outcomes`: past the first "
            f"{MAX_JOB_OUTCOMES:,} and, while the job runs, those not written yet (a "
            "running job writes its outcomes in batches). Null in the list of jobs."
        )
    )
    ahead: int | None = Field(
        description=(
            "Of a queued job, the jobs of any user that run before it: those running, and "
            "those waiting that workers take first (users take turns). Null otherwise, "
            "and in the list of jobs."
        )
    )


def job_out(app: BaseApp, job: JobView, *, with_outcomes: bool = True) -> JobOut:
    """The API's shape of a job; its outcomes and its place in the line null unless
    ``with_outcomes`` (the view was read with them: one job, not a list)."""
    try:
        index_name: str | None = app.indices.get(job.index_id).name
    except KeyError:
        index_name = None
    outcomes: list[dict[str, Any]] = job.outcomes
    return JobOut(
        id=job.id,
        index=index_name,
        kind="reindex" if job.kind == "reindex" else "add",
        status=job.status.value,
        files=job.names,
        files_done=job.files_done,
        fraction=job.fraction,
        current=job.current,
        error=job.error,
        cancel_requested=job.cancel_requested,
        worker=job.worker,
        attempts=job.attempts,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        outcomes=[JobOutcomeOut(**o) for o in outcomes] if with_outcomes else None,
        outcomes_not_listed=job.outcomes_not_listed if with_outcomes else None,
        ahead=(
            places_ahead(app.engine, job.id)
            if with_outcomes and job.status == JobStatus.QUEUED
            else None
        ),
    )


def job_router(app: BaseApp, current_user: Callable[[Request], User]) -> APIRouter:
    """The routes of the module docstring."""
    router = APIRouter(
        prefix="/api/v1", responses=ERROR_RESPONSES, dependencies=[Depends(current_user)]
    )

    def mine(job_id: str, user: User) -> JobView:
        try:
            return app.jobs.get(job_id, user.id, user.is_admin)
        except UnknownJobError:
            raise not_found("job", job_id) from None

    @router.get("/jobs", tags=["jobs"])
    def list_jobs(
        active: Annotated[bool, Query(description="Only queued and running jobs.")] = False,
        all: Annotated[bool, Query(description="Every user's (admins only).")] = False,
        limit: Annotated[int, Query(ge=1, le=MAX_JOBS_LISTED)] = 50,
        user: User = Depends(current_user),
    ) -> list[JobOut]:
        """The caller's indexing jobs, newest first, without their outcomes (GET
        /jobs/{job_id} has them): up to 200 jobs of up to MAX_JOB_OUTCOMES each."""
        owner = None if (all and user.is_admin) else user.id
        found = app.jobs.jobs(owner, active_only=active, limit=limit, with_outcomes=False)
        return [job_out(app, job, with_outcomes=False) for job in found]

    @router.get("/jobs/{job_id}", tags=["jobs"])
    def get_job(job_id: str, user: User = Depends(current_user)) -> JobOut:
        """One job: how far it is, and each finished file's outcome."""
        return job_out(app, mine(job_id, user))

    @router.post("/jobs/{job_id}/cancel", tags=["jobs"])
    def cancel_job(job_id: str, user: User = Depends(current_user)) -> JobOut:
        """Cancel a job: a queued one at once; a running one stops after the file it is
        indexing (the files indexed before stay). Cancelling a finished job changes nothing."""
        mine(job_id, user)
        return job_out(app, app.jobs.cancel(job_id, user.id, user.is_admin))

    return router
