"""What must hold for a new job's row to be written: :func:`admit`, in its transaction.

Two rules, each checked beside the insert rather than before it, since what they read may
change meanwhile:

- its index is there, under the name the upload found (:class:`JobIndexGoneError`): an
  index's deletion detaches the jobs there are (``JobStore.detach_index``), so a job
  written after it would run into the next index given its id (SQLite gives the highest
  again), and show that index's name to the job's owner;
- its owner has fewer than ``MAX_JOBS_PER_USER`` jobs queued or running
  (:class:`JobLimitError`): uploads sent together must not all find room for one more.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, text
from sqlmodel import Session, col, select

from ragloom_app.db.models import IndexingJob
from ragloom_app.errors import UserFacingError
from ragloom_app.jobs.view import ACTIVE

__all__ = ["JobIndexGoneError", "JobLimitError", "active_jobs_count", "admit"]

_OWNER_LOCKS = 7_261_024  # the first key of PostgreSQL's advisory locks of a job's owner


class JobLimitError(UserFacingError):
    """The user has ``MAX_JOBS_PER_USER`` jobs queued or running already."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"{limit} of your indexing jobs are queued or running (MAX_JOBS_PER_USER): "
            "wait for one to finish"
        )


class JobIndexGoneError(UserFacingError):
    """The job's index was deleted before the job could be written."""


def active_jobs_count(*, owner: str | None = None, index_id: int | None = None) -> Any:
    """The query counting the jobs queued or running, of ``owner`` or of an index."""
    query = (
        select(func.count())
        .select_from(IndexingJob)
        .where(col(IndexingJob.status).in_(list(ACTIVE)))
    )
    if owner is not None:
        query = query.where(IndexingJob.owner == owner)
    if index_id is not None:
        query = query.where(IndexingJob.index_id == index_id)
    return query


def admit(
    session: Session,
    *,
    index_id: int,
    index_name: str | None,
    owner: str,
    active_limit: int | None,
) -> None:
    """Begin ``session``'s transaction holding what the rules read until it ends, and raise
    if the job may not be written: :class:`JobIndexGoneError` if the index is not there
    (or, with ``index_name``, its id now names another), :class:`JobLimitError` if
    ``owner`` has ``active_limit`` jobs queued or running (no limit: ``None``)."""
    postgres = session.get_bind().dialect.name == "postgresql"
    if not postgres:
        # SQLite: the write lock, taken at once, holds off every other writer.
        session.exec(text("BEGIN IMMEDIATE"))  # type: ignore[call-overload]
    # PostgreSQL: the index's row, against its deletion.
    query = "SELECT name FROM indices WHERE id = :id" + (" FOR SHARE" if postgres else "")
    found = session.exec(text(query), params={"id": index_id}).first()  # type: ignore[call-overload]
    if found is None or (index_name is not None and found[0] != index_name):
        raise JobIndexGoneError("the index was deleted: nothing was queued")
    if active_limit is None:
        return
    if postgres:  # another admission of this owner's waits until this transaction ends
        session.exec(  # type: ignore[call-overload]
            text("SELECT pg_advisory_xact_lock(:space, hashtext(:owner))"),
            params={"space": _OWNER_LOCKS, "owner": owner},
        )
    if session.exec(active_jobs_count(owner=owner)).one() >= active_limit:
        raise JobLimitError(active_limit)
