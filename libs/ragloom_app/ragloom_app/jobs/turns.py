"""Whose indexing job runs next: the owners of waiting jobs take turns.

Each job queued or running has a *turn* among its owner's: the owner's oldest is turn 0,
the next turn 1, and so on. Workers take the waiting job of the lowest turn, the oldest
of those first, so a user who queued twenty large uploads holds up another user's single
upload by one of them at most (besides the jobs running already), not by all twenty; and
two users' jobs alternate. ``MAX_JOBS_PER_USER`` bounds how many turns one user holds.

A job's turn is counted when it is handed to its queue: the in-process queue orders its
jobs by it, and procrastinate keeps it as the task's priority (negated: procrastinate
takes the highest first). It is not counted again as the owner's earlier jobs end; those
jobs' turns were lower, so the order among each owner's jobs and between owners holds.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, or_
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from ragloom_app.db.models import IndexingJob, JobStatus
from ragloom_app.jobs.view import ACTIVE

__all__ = ["places_ahead", "turn_of"]


def _active_turns() -> Any:
    """The jobs queued or running, each with its turn among its owner's."""
    order = (col(IndexingJob.created_at), col(IndexingJob.id))
    turn = func.row_number().over(partition_by=IndexingJob.owner, order_by=order) - 1
    return (
        select(IndexingJob.id, IndexingJob.status, IndexingJob.created_at, turn.label("turn"))
        .where(col(IndexingJob.status).in_(list(ACTIVE)))
        .subquery()
    )


def turn_of(engine: Engine, job_id: str) -> int:
    """The job's turn among its owner's jobs queued or running (0 if it is neither)."""
    turns = _active_turns()
    with Session(engine) as session:
        found = session.exec(select(turns.c.turn).where(turns.c.id == job_id)).first()
    return int(found) if found is not None else 0


def places_ahead(engine: Engine, job_id: str) -> int:
    """How many jobs run before the queued job ``job_id``: those running, and those
    waiting that workers take first (a lower turn, or the same turn and older)."""
    turns = _active_turns()
    order = (turns.c.turn, turns.c.created_at, turns.c.id)
    line = select(
        turns.c.id, turns.c.status, func.row_number().over(order_by=order).label("place")
    ).subquery()
    mine = select(line.c.place).where(line.c.id == job_id).scalar_subquery()
    query = (
        select(func.count())
        .select_from(line)
        .where(line.c.id != job_id, or_(line.c.status == JobStatus.RUNNING, line.c.place < mine))
    )
    with Session(engine) as session:
        return int(session.exec(query).one())
