"""Whose indexing job runs next: the owners of waiting jobs take turns.

The queued jobs form one line, worked out afresh whenever a worker takes a job: each
owner's oldest queued job first, the owners ordered by whose job last started longest
ago (one who never had a job started first), then each owner's second queued job in the
same order, and so on. So a user who queued twenty large uploads holds up another user's
single upload by the jobs already running at most, and users with jobs waiting are served
in turn, whoever keeps uploading: none waits behind more than one job of each other user.
``MAX_JOBS_PER_USER`` bounds how many places one user holds.

The in-process queue asks which of its jobs is first at each take (:func:`first_in_line`).
procrastinate takes the task of highest priority, so a task's priority is its job's
place, negated (:func:`refresh_priorities`): set after each job is queued, after each job
a worker runs, and at each sweep.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import column, func, literal_column, table, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from ragloom_app.db.models import IndexingJob, JobStatus

__all__ = ["first_in_line", "places_ahead", "refresh_priorities"]


def _line() -> Any:
    """The queued jobs, each with its ``place`` in the line (1 first)."""
    last_start = (
        select(IndexingJob.owner, func.max(IndexingJob.started_at).label("started"))
        .group_by(col(IndexingJob.owner))
        .subquery()
    )
    age = (col(IndexingJob.created_at), col(IndexingJob.id))
    rank = func.row_number().over(partition_by=IndexingJob.owner, order_by=age) - 1
    queued = (
        select(
            IndexingJob.id,
            IndexingJob.created_at,
            rank.label("rank"),  # among the owner's queued jobs, the oldest 0
            last_start.c.started,
        )
        .join(last_start, last_start.c.owner == IndexingJob.owner)
        .where(IndexingJob.status == JobStatus.QUEUED)
        .subquery()
    )
    order = (
        queued.c.rank,
        queued.c.started.is_not(None),  # never served: first
        queued.c.started,
        queued.c.created_at,
        queued.c.id,
    )
    place = func.row_number().over(order_by=order).label("place")
    return select(queued.c.id, place).subquery()


def first_in_line(engine: Engine, job_ids: Sequence[str]) -> str | None:
    """Of ``job_ids``, the one workers take first; ``None`` if none is queued any more."""
    line = _line()
    query = select(line.c.id).where(line.c.id.in_(list(job_ids))).order_by(line.c.place).limit(1)
    with Session(engine) as session:
        found = session.exec(query).first()
    return str(found) if found is not None else None


def places_ahead(engine: Engine, job_id: str) -> int:
    """How many jobs run before the queued job ``job_id``: those running, and the queued
    ones before it in the line."""
    line = _line()
    mine = select(line.c.place).where(line.c.id == job_id).scalar_subquery()
    queued_before = select(func.count()).select_from(line).where(line.c.place < mine)
    running = (
        select(func.count()).select_from(IndexingJob).where(IndexingJob.status == JobStatus.RUNNING)
    )
    with Session(engine) as session:
        return int(session.exec(queued_before).one()) + int(session.exec(running).one())


# procrastinate's table of tasks, the columns this module sets or reads.
_TASKS = table("procrastinate_jobs", column("priority"), column("status"), column("queueing_lock"))


def refresh_priorities(engine: Engine) -> int:
    """Set the priority of each job's task waiting in procrastinate to the job's place in
    the line now, negated (procrastinate takes the highest first); how many changed.
    PostgreSQL only (procrastinate's database)."""
    line = _line()
    statement = (
        update(_TASKS)
        .where(
            _TASKS.c.status == literal_column("'todo'"),  # procrastinate's enum, untyped
            _TASKS.c.queueing_lock == line.c.id,
            _TASKS.c.priority != -line.c.place,
        )
        .values(priority=-line.c.place)
    )
    with engine.begin() as connection:
        return int(connection.execute(statement).rowcount)
