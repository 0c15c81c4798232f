"""Whether an index may be deleted now: one answer for the UI, the API, the CLI and the
removal of a user, so that none of them deletes what another would refuse to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragloom_app.index.base import BaseIndex

if TYPE_CHECKING:
    from ragloom_app.jobs.service import JobService

__all__ = ["deletion_refused"]


def deletion_refused(jobs: JobService, index: BaseIndex) -> str | None:
    """Why ``index`` cannot be deleted now, or ``None``: jobs queued or running on it
    (each would fail on a missing index, its files lost), or work its type knows of
    (:meth:`.BaseIndex.busy_with`, such as an import filling it)."""
    if jobs.busy(index):
        return "files are being indexed into it: cancel the jobs or wait"
    return index.busy_with()
