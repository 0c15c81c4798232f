"""Indexing jobs on the in-process queue (the laptop default), on SQLite and PostgreSQL:
a job indexes its files and reports each, shows its place and progress, is cancelled by
its owner (at once when queued, after the current file when running), and is taken again
when its worker died, within a bounded number of tries."""

from __future__ import annotations

import logging
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from ragloom_app.api.job_routes import job_out
from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.jobs import JobLimitError, UnknownJobError
from ragloom_app.jobs.queues import JobSweeper
from ragloom_app.jobs.runner import MAX_JOB_ATTEMPTS, JobRunner
from ragloom_app.jobs.staging import staging_dir
from ragloom_app.jobs.store import JobIndexGoneError, JobStore
from tests.helpers.api_server import replay_app
from tests.helpers.jobs import (
    alter_job,
    backdate,
    empty_job,
    finished_job,
    numbered_documents,
    staged_job,
)
from tests.helpers.outages import postgres_away


@pytest.fixture
def app(tmp_path: Path, database_url: str) -> Iterator[BaseApp]:
    started = replay_app(tmp_path, database_url=database_url, job_stall_seconds=1.0)
    yield started
    started.jobs.close()


def _stall(app: BaseApp, job_id: str, worker: str) -> None:
    """Leave the job as a worker killed while running it leaves it."""
    assert app.jobs.store.claim(job_id, worker, stall_seconds=1.0)
    backdate(app, job_id, "heartbeat_at")


def test_a_job_indexes_every_file_and_reports_each(app: BaseApp, tmp_path: Path) -> None:
    index = app.indices.get("My files")
    files = [*numbered_documents(tmp_path / "in", 3), ("notes.exe", tmp_path / "in" / "doc0.md")]
    job = app.jobs.submit_files(index, "local", files, move=False)
    assert job.status == JobStatus.QUEUED and job.names == [n for n, _ in files]
    done = finished_job(app, job.id, timeout=60)
    assert done.status == JobStatus.DONE and done.fraction == 1.0 and done.files_done == 4
    assert [(o["file"], o["status"]) for o in done.outcomes] == [
        ("doc0.md", "indexed"),
        ("doc1.md", "indexed"),
        ("doc2.md", "indexed"),
        ("notes.exe", "failed"),
    ]
    assert "unsupported file type" in done.outcomes[3]["reason"]
    assert sorted(s["name"] for s in index.list_sources()) == ["doc0.md", "doc1.md", "doc2.md"]
    assert not staging_dir(app.settings.data_dir, job.id).exists()
    assert all(path.exists() for _, path in files)  # copied, not moved: the caller's stay
    assert index.check().clean


def test_a_queued_job_is_cancelled_at_once_and_never_runs(app: BaseApp, tmp_path: Path) -> None:
    job_id = empty_job(app)  # stored but not submitted: it waits in the queue
    cancelled = app.jobs.cancel(job_id, "local")
    assert cancelled.status == JobStatus.CANCELLED and cancelled.finished_at is not None
    assert JobRunner(app, "late-worker").run(job_id) is None
    assert app.jobs.cancel(job_id, "local").status == JobStatus.CANCELLED  # changes nothing


def test_a_running_job_stops_after_the_file_it_is_on(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = app.indices.get("My files")
    job = app.jobs.submit_files(index, "local", numbered_documents(tmp_path / "in", 4), move=True)
    progress = JobStore.progress

    def cancel_after_the_first_file(self: JobStore, job_id: str, *args, **values):  # type: ignore[no-untyped-def]
        if len(values.get("outcomes") or []) == 1:
            app.jobs.cancel(job_id, "local")  # the owner presses Cancel now
        return progress(self, job_id, *args, **values)

    monkeypatch.setattr(JobStore, "progress", cancel_after_the_first_file)
    done = finished_job(app, job.id, timeout=60)
    assert done.status == JobStatus.CANCELLED and done.cancel_requested
    assert [(o["file"], o["status"]) for o in done.outcomes] == [
        ("doc0.md", "indexed"),
        ("doc1.md", "cancelled"),
        ("doc2.md", "cancelled"),
        ("doc3.md", "cancelled"),
    ]
    assert [s["name"] for s in index.list_sources()] == ["doc0.md"]
    assert index.check().clean and not staging_dir(app.settings.data_dir, job.id).exists()


def test_a_cancel_lists_each_file_not_reached_once_whatever_its_name(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An archive is reported by its members' outcomes, not listed cancelled as well; two
    files of one name (from two folders) are two files, each listed."""
    docs = numbered_documents(tmp_path / "in", 4)
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.write(docs[0][1], "doc0.md")
    files = [("bundle.zip", archive), ("notes.md", docs[1][1]), ("notes.md", docs[2][1])]
    job_id = staged_job(app, [*files, ("last.md", docs[3][1])], "names")
    progress = JobStore.progress

    def cancel_after_the_archive(self: JobStore, job_id: str, *args, **values):  # type: ignore[no-untyped-def]
        if any(o["file"] == "bundle.zip/doc0.md" for o in values.get("outcomes") or []):
            self.request_cancel(job_id)
        return progress(self, job_id, *args, **values)

    monkeypatch.setattr(JobStore, "progress", cancel_after_the_archive)
    assert JobRunner(app, "w").run(job_id) == JobStatus.CANCELLED
    done = JobStore(app.engine).get(job_id)
    assert done is not None
    assert [(o["file"], o["status"]) for o in done.outcomes] == [
        ("bundle.zip/doc0.md", "indexed"),
        ("notes.md", "cancelled"),
        ("notes.md", "cancelled"),
        ("last.md", "cancelled"),
    ]


def test_a_job_whose_worker_died_is_taken_again_and_finished(app: BaseApp, tmp_path: Path) -> None:
    store = JobStore(app.engine)
    job_id = staged_job(app, numbered_documents(tmp_path / "in", 2), "dead0000")
    _stall(app, job_id, "killed-worker")
    assert JobRunner(app, "another").run(job_id) is not None  # stalled: it may be taken

    # The same, found by the sweeper rather than by a worker told to run it.
    job2_id = empty_job(app)
    _stall(app, job2_id, "killed-worker")
    resubmitted: list[str] = []
    assert JobSweeper(store, 1.0, resubmitted.append).sweep() == [job2_id]
    assert resubmitted == [job2_id] and store.get(job2_id).status == JobStatus.QUEUED  # type: ignore[union-attr]
    done = store.get(job_id)
    assert done is not None and done.status == JobStatus.DONE and done.attempts == 2
    assert done.worker == "another" and [o["status"] for o in done.outcomes] == ["indexed"] * 2


def test_a_job_the_worker_could_not_claim_with_the_database_away_runs_later(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database away when the in-process worker takes a job: the job stays queued,
    and only this process knew to run it, so the worker tries again (it was lost, before,
    until the next restart)."""
    claim, refused = JobStore.claim, []

    def away_once(store: JobStore, *args: object, **kwargs: object) -> bool:
        if not refused:
            refused.append(True)
            raise OperationalError("SELECT", {}, Exception("the connection is lost"))
        return claim(store, *args, **kwargs)  # type: ignore[arg-type]

    app.jobs.start()  # a queue starting now would take the queued job from the database
    monkeypatch.setattr(JobStore, "claim", away_once)
    job = app.jobs.submit_files(
        app.indices.get("My files"), "local", numbered_documents(tmp_path / "in", 1), move=False
    )
    done = finished_job(app, job.id, timeout=60)
    assert refused and done.status == JobStatus.DONE and done.attempts == 1
    assert [o["status"] for o in done.outcomes] == ["indexed"]


def test_a_queued_job_its_queue_never_got_is_submitted_by_the_sweeper(
    app: BaseApp, tmp_path: Path
) -> None:
    """The row written, the hand-over to the queue lost (the database went away between
    the two, or before the worker that took the job could claim it): once the job has
    waited ``JOB_STALL_SECONDS``, the sweeper submits it again, and it runs once."""
    app.jobs.start()
    lost_id = empty_job(app)
    done = finished_job(app, lost_id)
    assert done.status == JobStatus.DONE and done.attempts == 1


def test_the_sweeper_submits_only_jobs_that_waited_their_stall_time(app: BaseApp) -> None:
    store = JobStore(app.engine)
    old_id, _new_id = empty_job(app), empty_job(app)
    backdate(app, old_id, "created_at")
    submitted: list[str] = []
    assert JobSweeper(store, 30.0, submitted.append).sweep() == []  # none was running
    assert submitted == [old_id]  # the new one may be waiting its turn in the queue


def _resubmitted_by_a_started_sweeper(sweeper: JobSweeper, resubmitted: list[str]) -> list[str]:
    """What ``sweeper``, started with its first turn at once, resubmits within 5 s."""
    sweeper.start(at_once=True)
    try:
        deadline = time.monotonic() + 5
        while not resubmitted and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        sweeper.stop()
    return resubmitted


def test_a_sweeper_started_at_once_takes_back_a_dead_workers_job_without_a_pause(
    app: BaseApp,
) -> None:
    """``ragloom worker`` starts its sweeper so: its first turn need not wait half of
    JOB_STALL_SECONDS."""
    store, job_id = JobStore(app.engine), empty_job(app)
    assert store.claim(job_id, "killed", stall_seconds=30.0)
    backdate(app, job_id, "heartbeat_at")
    resubmitted: list[str] = []
    sweeper = JobSweeper(store, 30.0, resubmitted.append)
    assert _resubmitted_by_a_started_sweeper(sweeper, resubmitted) == [job_id]


def test_a_sweepers_first_turn_that_fails_is_tried_again_at_the_next(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The database away as ``ragloom worker`` starts: its first sweep used to end it."""
    store, job_id = JobStore(app.engine), empty_job(app)
    _stall(app, job_id, "killed")
    stalled, refused = store.stalled, []

    def away_once(seconds: float) -> list[str]:
        if not refused:
            refused.append(True)
            raise postgres_away()
        return stalled(seconds)

    monkeypatch.setattr(store, "stalled", away_once)
    resubmitted: list[str] = []
    with caplog.at_level(logging.WARNING, logger="ragloom_app.jobs.queues"):
        sweeper = JobSweeper(store, 1.0, resubmitted.append)
        assert _resubmitted_by_a_started_sweeper(sweeper, resubmitted) == [job_id]
    assert refused and "sweeping stalled jobs failed" in caplog.text


def test_a_job_queued_again_waits_its_stall_time_before_it_is_submitted_again(
    app: BaseApp,
) -> None:
    store = JobStore(app.engine)
    job_id = empty_job(app)
    backdate(app, job_id, "created_at")
    _stall(app, job_id, "killed")
    submitted: list[str] = []
    assert JobSweeper(store, 1.0, submitted.append).sweep() == [job_id]
    assert submitted == [job_id]  # once: queued again now, not 60 s ago


def test_a_job_cancelled_as_the_sweeper_takes_it_back_is_cancelled(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JobStore(app.engine)
    job_id = empty_job(app)
    _stall(app, job_id, "killed")

    def resubmit(job_id: str) -> None:
        store.request_cancel(job_id)  # the owner presses Cancel as the sweeper takes it

    assert JobSweeper(store, 1.0, resubmit).sweep() == []
    cancelled = store.get(job_id)
    assert cancelled is not None and cancelled.status == JobStatus.CANCELLED


def test_a_job_claimed_as_the_sweeper_takes_it_back_is_left_to_its_new_worker(
    app: BaseApp,
) -> None:
    """Claimed by a live worker the moment the sweeper submits it, and cancelled at once:
    that worker sees the cancel between two files; the sweeper does not end the job under
    it (and remove the upload it reads)."""
    store = JobStore(app.engine)
    job_id = empty_job(app)
    _stall(app, job_id, "killed")

    def claimed_and_cancelled(job_id: str) -> None:
        assert store.claim(job_id, "live", stall_seconds=1.0)
        store.request_cancel(job_id)

    assert JobSweeper(store, 1.0, claimed_and_cancelled).sweep() == []
    running = store.get(job_id)
    assert running is not None and running.status == JobStatus.RUNNING
    assert running.worker == "live" and running.cancel_requested


def test_a_queued_job_left_with_its_cancel_asked_is_cancelled_by_the_first_sweep(
    app: BaseApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows an older release left queued with a cancel asked: no claim takes them, and
    they counted against their owner's jobs for good. Only a sweeper's first turn looks
    for them: no release since leaves them."""
    store = JobStore(app.engine)
    job_id = empty_job(app)
    alter_job(app, job_id, cancel_requested=True)
    sweeper = JobSweeper(store, 30.0, lambda _: pytest.fail("submitted"))
    assert sweeper.sweep() == []
    cancelled = store.get(job_id)
    assert cancelled is not None and cancelled.status == JobStatus.CANCELLED
    assert cancelled.error == "cancelled by its owner before it started"
    monkeypatch.setattr(store, "cancel_flagged_queued", lambda: pytest.fail("looked again"))
    assert sweeper.sweep() == []


def test_an_upload_whose_job_could_not_be_queued_is_accepted_and_run_later(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job's row written, its hand-over to the queue failed (the broker away): the
    upload is accepted, and the sweeper queues the job once it waited its stall time."""
    app.jobs.start()

    def broker_away(job_id: str) -> None:
        raise postgres_away("could not defer")

    monkeypatch.setattr(app.jobs.queue, "submit", broker_away)  # the sweeper's is its own
    job = app.jobs.submit_files(
        app.indices.get("My files"), "local", numbered_documents(tmp_path / "in", 2), move=False
    )
    done = finished_job(app, job.id)
    assert done.status == JobStatus.DONE and done.attempts == 1
    assert [o["status"] for o in done.outcomes] == ["indexed"] * 2


def test_an_upload_whose_queue_fails_otherwise_fails_its_job_saying_so(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app.jobs.start()

    def broken(job_id: str) -> None:
        raise ValueError("a setting the queue cannot use")

    monkeypatch.setattr(app.jobs.queue, "submit", broken)
    with pytest.raises(ValueError, match="a setting the queue cannot use"):
        app.jobs.submit_files(
            app.indices.get("My files"), "local", numbered_documents(tmp_path / "in", 1), move=False
        )
    (failed,) = app.jobs.store.jobs("local")
    assert (
        failed.status == JobStatus.FAILED and failed.error == "it could not be queued: ValueError"
    )
    assert not staging_dir(app.settings.data_dir, failed.id).exists()


def test_an_upload_the_database_refuses_leaves_no_staged_files(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def away(*args: object, **kwargs: object) -> None:
        raise OperationalError("INSERT", {}, Exception("the connection is lost"))

    monkeypatch.setattr(JobStore, "create", away)
    with pytest.raises(OperationalError):
        app.jobs.submit_files(
            app.indices.get("My files"), "local", numbered_documents(tmp_path / "in", 2), move=False
        )
    assert not any((app.settings.data_dir / "jobs").glob("*"))


def test_a_stalled_job_whose_resubmission_fails_is_taken_at_the_next_sweep(app: BaseApp) -> None:
    """The queue's broker away as the sweeper submits a stalled job again: the job stays
    running and stalled, not queued with nobody to run it, and the next turn submits it."""
    store = JobStore(app.engine)
    job_id = empty_job(app)
    _stall(app, job_id, "killed")

    resubmitted: list[str] = []

    def broker_away_once(job_id: str) -> None:
        resubmitted.append(job_id)
        if len(resubmitted) == 1:
            raise OperationalError("INSERT", {}, Exception("the connection is lost"))

    sweeper = JobSweeper(store, 1.0, broker_away_once)
    with pytest.raises(OperationalError):
        sweeper.sweep()
    assert store.get(job_id).status == JobStatus.RUNNING  # type: ignore[union-attr]
    assert sweeper.sweep() == [job_id]  # the same sweeper's next turn
    assert resubmitted == [job_id, job_id] and store.get(job_id).status == JobStatus.QUEUED  # type: ignore[union-attr]


def test_a_job_that_keeps_killing_its_workers_is_failed(app: BaseApp) -> None:
    store = JobStore(app.engine)
    job_id = empty_job(app)
    for n in range(MAX_JOB_ATTEMPTS):  # each start, its worker is killed
        _stall(app, job_id, f"killed-{n}")
        assert JobSweeper(store, 1.0, lambda _: None).sweep() == [job_id]
    assert JobRunner(app, "next").run(job_id) == JobStatus.FAILED
    failed = store.get(job_id)
    assert failed is not None and failed.status == JobStatus.FAILED
    assert failed.error == f"its worker stopped {MAX_JOB_ATTEMPTS} times while running it"


def test_a_worker_that_was_killed_with_a_cancel_asked_leaves_it_cancelled(app: BaseApp) -> None:
    store = JobStore(app.engine)
    job_id = empty_job(app)
    _stall(app, job_id, "killed")
    assert store.request_cancel(job_id) == JobStatus.RUNNING  # asked; nobody heeds it
    assert JobSweeper(store, 1.0, lambda _: pytest.fail("resubmitted")).sweep() == []
    assert store.get(job_id).status == JobStatus.CANCELLED  # type: ignore[union-attr]


def test_what_can_go_wrong_with_the_job_itself_fails_it_with_the_reason(
    app: BaseApp, tmp_path: Path
) -> None:
    index = app.indices.get("My files")
    gone = app.jobs.submit_files(index, "local", numbered_documents(tmp_path / "a", 1), move=False)
    done = finished_job(app, gone.id, timeout=60)
    assert done.status == JobStatus.DONE
    store = JobStore(app.engine)
    lost = store.create(
        index_id=index.id, owner="local", kind="add", files=[{"name": "a.md", "path": "0"}]
    )
    assert JobRunner(app, "w").run(lost.id) == JobStatus.FAILED
    assert "the staged upload is gone" in (store.get(lost.id).error or "")  # type: ignore[union-attr]
    other = app.indices.create("Doomed", next(iter(app.indices.index_types)))
    orphan = store.create(index_id=other.id, owner="local", kind="add", files=[])
    alter_job(app, orphan.id, index_id=other.id + 1000)  # as if its index were gone
    assert JobRunner(app, "w").run(orphan.id) == JobStatus.FAILED
    assert store.get(orphan.id).error == "its index was deleted"  # type: ignore[union-attr]


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
    assert store.ahead_of(store.create(index_id=index.id, owner="bob", kind="add", files=[])) == 2


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
