"""Deleting a user together with what is theirs alone.

An account's rows (sessions, keys, saved defaults) are the :class:`.AccountStore`'s; what
the user made lives elsewhere: conversations, private indices (their files, chunks and
vectors), indexing jobs. :func:`remove_user` removes all of it, in an order that a crash
or a refusal can stop at any point without exposing anything: the account is disabled
first, so it can start nothing new and nobody can act as it while the rest goes, and a
second call finishes what the first began.

Shared indices the user owns are kept: other users read them. They stay listed with
"(deleted user)" as their owner, and an admin manages them as it manages any shared index.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlmodel import Session, select

from ragloom_app.accounts.identity import AccountError
from ragloom_app.conversations import ConversationStore
from ragloom_app.db.models import IndexRecord
from ragloom_app.index.deletion import deletion_refused

if TYPE_CHECKING:
    from ragloom_app.app import BaseApp

__all__ = ["RemovedUser", "UserBusyError", "remove_user"]

logger = logging.getLogger(__name__)


class UserBusyError(AccountError):
    """The user's indexing jobs are still running (they were asked to stop), or work under
    way outside the app fills one of their private indices (an import); delete again once
    it has ended (the account stays disabled meanwhile)."""


@dataclass(frozen=True)
class RemovedUser:
    """What :func:`remove_user` removed and kept."""

    name: str
    conversations: int
    """Conversations deleted, with their messages."""
    indices: tuple[str, ...]
    """Private indices deleted, with everything they stored."""
    shared_kept: tuple[str, ...]
    """Shared indices the user owned, kept for their readers (admins manage them)."""
    unavailable_kept: tuple[str, ...] = ()
    """Private indices that could not be deleted now (their type is not available, a
    plugin missing): their rows stay for an admin, closed to every user."""
    jobs: int = 0
    """Finished indexing jobs deleted (their file names and outcomes)."""

    def summary(self) -> str:
        """One sentence for the admin who deleted the user."""
        took = [
            _count(self.conversations, "conversation", "conversations"),
            _count(len(self.indices), "private index", "private indices") + _names(self.indices),
        ]
        line = f"Deleted {self.name}, with {' and '.join(took)}"
        if self.shared_kept:
            kept = _count(len(self.shared_kept), "shared index", "shared indices")
            line += f"; kept {kept}{_names(self.shared_kept)} for its readers"
        if self.unavailable_kept:
            kept = _count(len(self.unavailable_kept), "private index", "private indices")
            line += f"; kept {kept}{_names(self.unavailable_kept)} whose type is unavailable"
        return line + "."


def _count(count: int, one: str, many: str) -> str:
    return f"no {many}" if count == 0 else f"1 {one}" if count == 1 else f"{count} {many}"


def _names(names: tuple[str, ...]) -> str:
    return f" ({', '.join(repr(n) for n in names)})" if names else ""


def remove_user(app: BaseApp, name: str) -> RemovedUser:
    """Delete the user ``name`` with its conversations, private indices and jobs.

    Its queued jobs are cancelled; a running one is asked to stop, and the deletion is
    refused with :class:`UserBusyError` until it has (a job stops after the file it is on);
    so it is, before anything is deleted, while one of its private indices is busy
    (:func:`.deletion_refused`: an import filling it). Raises :class:`.AccountError` if
    there is no such user.
    """
    accounts = app.accounts
    user = accounts.user_named(name)
    if user is None:
        raise AccountError(f"no user named {name!r}")
    accounts.set_disabled(name, True)
    running = [
        job
        for job in app.jobs.jobs(user.id, active_only=True, limit=10_000)
        if not app.jobs.cancel(job.id, user.id).finished
    ]
    if running:
        raise UserBusyError(
            f"{name} is disabled and {len(running)} indexing job(s) of theirs are stopping: "
            "delete again once they have (each stops after the file it is on)"
        )
    with Session(app.engine) as session:
        owned = list(session.exec(select(IndexRecord).where(IndexRecord.owner == user.id)))
    for record in owned:
        if record.shared or record.name in app.indices.unavailable:
            continue
        assert record.id is not None  # a stored row
        if (refused := deletion_refused(app.jobs, app.indices.get(record.id))) is not None:
            raise UserBusyError(
                f"{name} is disabled and their private index {record.name!r} cannot be "
                f"deleted now: {refused}; then delete again"
            )
    conversations = ConversationStore(app.engine).delete_all(user.id)
    deleted, shared, unavailable = [], [], []
    for record in owned:
        if record.shared:
            shared.append(record.name)
        elif record.name in app.indices.unavailable:
            unavailable.append(record.name)
        else:
            assert record.id is not None  # a stored row
            app.indices.delete(record.id)
            deleted.append(record.name)
    jobs = app.jobs.store.delete_finished(user.id)
    accounts.delete_user(name)
    removed = RemovedUser(
        name, conversations, tuple(deleted), tuple(shared), tuple(unavailable), jobs
    )
    logger.info("%s", removed.summary())  # the admin's action, in the log
    if unavailable:
        logger.warning("user %s deleted; private indices kept (unavailable): %s", name, unavailable)
    return removed
