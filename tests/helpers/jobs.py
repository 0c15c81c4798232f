"""Indexing jobs as the tests of ``ragloom_app.jobs`` make, age and wait on them.

The rows are written through :class:`~ragloom_app.jobs.store.JobStore`, as the service
writes them; only :func:`alter_job` and :func:`backdate` reach past it, to leave a row as
time, a killed worker or an older release would.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from sqlmodel import Session, col

from ragloom_app.app import BaseApp
from ragloom_app.db.models import IndexingJob
from ragloom_app.jobs.staging import staging_dir
from ragloom_app.jobs.store import JobStore, JobView
from tests.helpers.file_index import one_chunk_documents

__all__ = [
    "alter_job",
    "backdate",
    "cancel_when",
    "empty_job",
    "finished_job",
    "numbered_documents",
    "staged_job",
    "staging_removed",
    "stalled",
]


def empty_job(app: BaseApp, index_name: str = "My files") -> str:
    """The id of a new queued job with no files on ``index_name``, handed to no queue."""
    index_id = app.indices.get(index_name).id
    store = JobStore(app.engine)
    return store.create(index_id=index_id, owner="local", kind="add", files=[]).id


def numbered_documents(folder: Path, count: int) -> list[tuple[str, Path]]:
    """:func:`~tests.helpers.file_index.one_chunk_documents` as (shown name, path) pairs, as
    a job takes its files: ``doc0.md`` says the Zorblax code is 1000, and so on."""
    return [(path.name, path) for path in one_chunk_documents(folder, count)]


def staged_job(
    app: BaseApp, files: list[tuple[str, Path]], job_id: str, index_name: str = "My files"
) -> str:
    """A queued job over ``files``, staged as :meth:`JobService.submit_files` stages an
    upload, but handed to no queue: the test runs it."""
    folder = staging_dir(app.settings.data_dir, job_id)
    folder.mkdir(parents=True)
    for position, (_, path) in enumerate(files):
        (folder / str(position)).write_bytes(path.read_bytes())
    entries = [{"name": name, "path": str(n)} for n, (name, _) in enumerate(files)]
    index_id = app.indices.get(index_name).id
    store = JobStore(app.engine)
    return store.create(
        job_id=job_id, index_id=index_id, owner="local", kind="add", files=entries
    ).id


def finished_job(app: BaseApp, job_id: str, timeout: float = 30) -> JobView:
    """The job once it is done, failed or cancelled; an assertion past ``timeout``."""
    store = JobStore(app.engine)
    deadline = time.monotonic() + timeout
    while (seen := store.get(job_id)) is None or not seen.finished:
        assert time.monotonic() < deadline, seen
        time.sleep(0.05)
    return seen


def staging_removed(app: BaseApp, job_id: str, timeout: float = 30) -> bool:
    """Whether the job's staged upload is gone within ``timeout``: the run that ended the
    job removes it just after recording the end (the end first, lest a crash between the
    two leave a job to run again without its files)."""
    folder = staging_dir(app.settings.data_dir, job_id)
    deadline = time.monotonic() + timeout
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not folder.exists()


def alter_job(app: BaseApp, job_id: str, **values: Any) -> None:
    """Write ``values`` (columns of :class:`IndexingJob`, or SQL expressions of them) into
    the job's row, bypassing the store's rules."""
    with Session(app.engine) as session:
        session.exec(update(IndexingJob).where(col(IndexingJob.id) == job_id).values(values))
        session.commit()


def backdate(app: BaseApp, job_id: str, column: str, seconds: float = 60) -> None:
    """Set the job's ``column`` (a time: ``heartbeat_at``, ``created_at``…) to ``seconds``
    ago, as a worker killed that long ago leaves its heartbeat."""
    alter_job(app, job_id, **{column: datetime.now(UTC) - timedelta(seconds=seconds)})


def stalled(app: BaseApp, job_id: str, worker: str) -> None:
    """Leave the job as a worker killed while running it leaves it: claimed by
    ``worker`` (with a stall time of 1 s), its heartbeat a minute old."""
    assert app.jobs.store.claim(job_id, worker, stall_seconds=1.0)
    backdate(app, job_id, "heartbeat_at")


def cancel_when(
    monkeypatch: pytest.MonkeyPatch,
    reached: Callable[[list[dict[str, Any]]], bool],
    cancel: Callable[[JobStore, str], object] = JobStore.request_cancel,
) -> None:
    """Press Cancel on a job as soon as the outcomes it reports satisfy ``reached`` (between
    two of its files, as an owner would): :meth:`JobStore.progress` is wrapped to call
    ``cancel`` (the store's own request by default) before it records them."""
    progress = JobStore.progress

    def progress_after_cancel(self: JobStore, job_id: str, *args: Any, **values: Any) -> bool:
        if reached(values.get("outcomes") or []):
            cancel(self, job_id)
        return progress(self, job_id, *args, **values)

    monkeypatch.setattr(JobStore, "progress", progress_after_cancel)
