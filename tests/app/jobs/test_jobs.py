"""Indexing jobs on the in-process queue (the laptop default), on SQLite and PostgreSQL:
a job indexes its files and reports each, is cancelled by its owner (at once when queued,
after the current file when running), is taken again when its worker died, and is failed
with the reason when what it needs is gone. The sweepers: test_job_sweeper.py; what must
hold for a job to be written: test_job_admission.py."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.index import manager
from ragloom_app.index.file import FileIndex
from ragloom_app.jobs.queues import JobSweeper
from ragloom_app.jobs.runner import MAX_JOB_ATTEMPTS, JobRunner
from ragloom_app.jobs.staging import staging_dir
from ragloom_app.jobs.store import JobStore
from tests.helpers.api_server import replay_app
from tests.helpers.jobs import (
    alter_job,
    cancel_when,
    empty_job,
    finished_job,
    numbered_documents,
    staged_job,
    staging_removed,
    stalled,
)
from tests.helpers.outages import postgres_away


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
    assert staging_removed(app, job.id)
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
    cancel_when(
        monkeypatch,
        lambda outcomes: len(outcomes) == 1,
        cancel=lambda _, job_id: app.jobs.cancel(job_id, "local"),  # as its owner presses Cancel
    )
    done = finished_job(app, job.id, timeout=60)
    assert done.status == JobStatus.CANCELLED and done.cancel_requested
    assert [(o["file"], o["status"]) for o in done.outcomes] == [
        ("doc0.md", "indexed"),
        ("doc1.md", "cancelled"),
        ("doc2.md", "cancelled"),
        ("doc3.md", "cancelled"),
    ]
    # The files listed cancelled are not done: before, this job read "4/4 files".
    assert (done.files_done, done.files_total, done.outcomes_not_listed) == (1, 4, 0)
    assert [s["name"] for s in index.list_sources()] == ["doc0.md"]
    assert index.check().clean and staging_removed(app, job.id)


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
    cancel_when(
        monkeypatch, lambda outcomes: any(o["file"] == "bundle.zip/doc0.md" for o in outcomes)
    )
    assert JobRunner(app, "w").run(job_id) == JobStatus.CANCELLED
    done = JobStore(app.engine).get(job_id)
    assert done is not None
    assert [(o["file"], o["status"]) for o in done.outcomes] == [
        ("bundle.zip/doc0.md", "indexed"),
        ("notes.md", "cancelled"),
        ("notes.md", "cancelled"),
        ("last.md", "cancelled"),
    ]


def test_a_file_named_with_a_nul_fails_alone_and_is_reported_by_its_shown_name(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A NUL in a name (multipart accepts it) is never written as the job's progress:
    PostgreSQL's text columns refuse it, which failed the whole job, no file indexed."""
    index = app.indices.get("My files")
    docs = numbered_documents(tmp_path / "in", 3)
    job = app.jobs.submit_files(
        index, "local", [("bad\x00name.md", docs[0][1]), *docs[1:]], move=False
    )
    done = finished_job(app, job.id, timeout=60)
    assert done.status == JobStatus.DONE, done.error
    assert [(o["file"], o["status"]) for o in done.outcomes] == [
        ("bad?name.md", "failed"),
        ("doc1.md", "indexed"),
        ("doc2.md", "indexed"),
    ]
    assert "NUL" in done.outcomes[0]["reason"]
    # A cancel lists a file it did not reach by the name its outcome would have had.
    job_id = staged_job(app, [docs[0], ("late\x00.md", docs[1][1])], "nul-cancel")
    cancel_when(monkeypatch, bool)  # after the first file
    assert JobRunner(app, "w").run(job_id) == JobStatus.CANCELLED
    cancelled = JobStore(app.engine).get(job_id)
    assert cancelled is not None
    assert [(o["file"], o["status"]) for o in cancelled.outcomes] == [
        ("doc0.md", "indexed"),  # refused under its NUL name above
        ("late?.md", "cancelled"),
    ]


def test_a_job_whose_worker_died_is_taken_again_and_finished(app: BaseApp, tmp_path: Path) -> None:
    store = JobStore(app.engine)
    job_id = staged_job(app, numbered_documents(tmp_path / "in", 2), "dead0000")
    stalled(app, job_id, "killed-worker")
    assert JobRunner(app, "another").run(job_id) is not None  # stalled: it may be taken

    # The same, found by the sweeper rather than by a worker told to run it.
    job2_id = empty_job(app)
    stalled(app, job2_id, "killed-worker")
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


def _worker_whose_start_failed(
    app: BaseApp, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[BaseApp, list[bool]]:
    """Another process of ``app``'s (a worker) that started as the index's store was
    away: its "My files" failed to start. The list says the store is away while it holds
    True; a start that finds it back succeeds."""
    store_away = [True]
    on_start = FileIndex.on_start

    def start(index: FileIndex) -> None:
        if store_away[0]:
            raise ConnectionError("the store is away")
        on_start(index)

    monkeypatch.setattr(FileIndex, "on_start", start)
    worker = replay_app(app.settings.data_dir.parent, database_url=database_url)
    assert "My files" in worker.indices.unavailable
    return worker, store_away


def test_a_job_whose_index_failed_to_start_here_waits_with_its_upload_until_it_starts(
    app: BaseApp, tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker hands the job back to the queue (its claim counted), upload kept, and
    starts the index again once START_RETRY_SECONDS have passed: the job runs then. Before,
    such a worker failed every job of the index, "its index was deleted", removing their
    uploads, and never started the index again."""
    monkeypatch.setattr(manager, "START_RETRY_SECONDS", 0.0, raising=False)
    job_id = staged_job(app, numbered_documents(tmp_path / "in", 2), "unstarted")
    worker, store_away = _worker_whose_start_failed(app, database_url, monkeypatch)
    store = JobStore(app.engine)
    assert JobRunner(worker, "w").run(job_id) is None
    handed = store.get(job_id)
    assert handed is not None
    assert (handed.status, handed.attempts, handed.error) == (JobStatus.QUEUED, 1, None)
    assert staging_dir(app.settings.data_dir, job_id).is_dir()
    store_away[0] = False  # back: the worker's next look at the indices starts the index
    assert JobRunner(worker, "w").run(job_id) == JobStatus.DONE
    done = store.get(job_id)
    assert done is not None and done.attempts == 2
    assert [o["status"] for o in done.outcomes] == ["indexed"] * 2
    assert worker.indices.unavailable == {} and staging_removed(app, job_id)


def test_a_job_whose_index_never_starts_here_fails_after_its_tries_saying_why(
    app: BaseApp, tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manager, "START_RETRY_SECONDS", 0.0, raising=False)
    job_id = staged_job(app, numbered_documents(tmp_path / "in", 1), "neverstarted")
    worker, _ = _worker_whose_start_failed(app, database_url, monkeypatch)
    runner, store = JobRunner(worker, "w"), JobStore(app.engine)
    for _ in range(MAX_JOB_ATTEMPTS - 1):
        assert runner.run(job_id) is None
    assert runner.run(job_id) == JobStatus.FAILED
    failed = store.get(job_id)
    assert failed is not None and failed.attempts == MAX_JOB_ATTEMPTS
    assert (failed.error or "").startswith(
        f"its index could not be started ({MAX_JOB_ATTEMPTS} tries): "
        "Starting the index 'My files' failed: a connection failed (log reference "
    )
    assert staging_removed(app, job_id)
