"""What must hold for a job to be written (``ragloom_app.jobs.admission``), on SQLite and
PostgreSQL: jobs are their owners', within MAX_JOBS_PER_USER even when sent together,
and never written for an index deleted meanwhile, nor run into a later index given its
id."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from ragloom_app.api.job_routes import job_out
from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.jobs import JobLimitError, UnknownJobError
from ragloom_app.jobs.admission import JobIndexGoneError
from ragloom_app.jobs.runner import JobRunner
from ragloom_app.jobs.store import JobStore
from ragloom_app.jobs.turns import places_ahead
from tests.helpers.jobs import (
    alter_job,
    numbered_documents,
    staged_job,
)


def test_jobs_are_their_owners_and_bounded_per_user(app: BaseApp, tmp_path: Path) -> None:
    index = app.indices.get("My files")
    store = JobStore(app.engine)
    job = store.create(index_id=index.id, owner="alice", kind="add", files=[])
    assert app.jobs.get(job.id, "alice").owner == "alice"
    with pytest.raises(UnknownJobError):
        app.jobs.get(job.id, "bob")
    with pytest.raises(UnknownJobError):
        app.jobs.cancel(job.id, "bob")
    assert app.jobs.get(job.id, "bob", is_admin=True).id == job.id
    assert [j.id for j in app.jobs.jobs("bob")] == []
    app.settings.max_jobs_per_user = 2
    store.create(index_id=index.id, owner="alice", kind="add", files=[])
    with pytest.raises(JobLimitError, match="MAX_JOBS_PER_USER"):
        app.jobs.submit_files(index, "alice", numbered_documents(tmp_path / "in", 1), move=False)
    bobs = store.create(index_id=index.id, owner="bob", kind="add", files=[])
    assert places_ahead(app.engine, bobs.id) == 1  # alice's first; her second waits


def test_uploads_sent_together_never_pass_the_per_user_bound(app: BaseApp) -> None:
    """Each finds room before it is staged; only as many as the bound are written, since
    the count and the insert go one at a time per owner (another owner is not held up)."""
    index_id, store = app.indices.get("My files").id, JobStore(app.engine)
    start, made, refused = threading.Barrier(8), [], []

    def submit(owner: str) -> None:
        start.wait()
        try:
            made.append(
                store.create(index_id=index_id, owner=owner, kind="add", files=[], active_limit=2)
            )
        except JobLimitError:
            refused.append(owner)

    threads = [
        threading.Thread(target=submit, args=(owner,)) for owner in ["alice"] * 6 + ["bob"] * 2
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(job.owner for job in made) == ["alice", "alice", "bob", "bob"]
    assert refused == ["alice"] * 4
    assert store.count_active(owner="alice") == 2


def test_a_deleted_indexs_jobs_fail_and_never_reach_an_index_given_its_id(
    app: BaseApp, tmp_path: Path
) -> None:
    """SQLite gives a new index the highest id again: alice's job of her deleted index
    would have run into bob's new private index, and shown her its name. It fails, and
    stays in her history naming no index."""
    file_index = next(iter(app.indices.index_types))
    doomed = app.indices.create("Alice drafts", file_index, owner="alice", shared=False)
    job_id = staged_job(app, numbered_documents(tmp_path / "in", 1), "doomed", "Alice drafts")
    alter_job(app, job_id, owner="alice")
    app.indices.delete(doomed.id)
    reused = app.indices.create("Bob plans", file_index, owner="bob", shared=False)
    assert JobRunner(app, "w").run(job_id) is None
    (failed,) = app.jobs.jobs("alice")
    assert (failed.id, failed.status, failed.error) == (
        job_id,
        JobStatus.FAILED,
        "its index was deleted",
    )
    assert job_out(app, failed).index is None
    assert reused.list_sources() == []  # type: ignore[attr-defined]
    # An upload that found the index before its deletion cannot write a job for it after,
    # even once another index has its id: the deletion and the job's row are one at a
    # time, and the job names the index it was for.
    with pytest.raises(JobIndexGoneError, match="the index was deleted"):
        JobStore(app.engine).create(
            index_id=doomed.id, index_name="Alice drafts", owner="alice", kind="add", files=[]
        )
