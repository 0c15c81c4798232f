"""Staged uploads no job will read are removed by the sweepers: those of finished jobs and
of jobs that do not exist (once nothing was added to them for a grace time), never those
of a queued or running job. An upload whose row may have been written despite an error
keeps its files for that job."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.exc import OperationalError

from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.jobs import queues
from ragloom_app.jobs.queues import JobSweeper
from ragloom_app.jobs.staging import (
    STAGING_GRACE_SECONDS,
    remove_leftover_staging,
    staging_dir,
)
from ragloom_app.jobs.store import JobStore
from tests.helpers.api_server import replay_app
from tests.helpers.cli import PROJECT
from tests.helpers.jobs import backdate, empty_job, finished_job


def _staged(app: BaseApp, job_id: str, age_seconds: float = 0.0) -> Path:
    folder = staging_dir(app.settings.data_dir, job_id)
    folder.mkdir(parents=True)
    (folder / "0").write_text("an upload")
    then = time.time() - age_seconds
    os.utime(folder, (then, then))
    return folder


def test_only_the_folders_no_job_will_read_are_removed(app: BaseApp) -> None:
    store = JobStore(app.engine)
    queued, running, done = empty_job(app), empty_job(app), empty_job(app)
    assert store.claim(running, "worker", stall_seconds=30)
    assert store.finish(done, JobStatus.CANCELLED)
    for job_id in (queued, running, done):
        _staged(app, job_id)
    fresh, old = "a" * 32, "b" * 32  # ids of no job
    _staged(app, fresh)  # an upload still being copied, its row not yet written
    _staged(app, old, age_seconds=7200)  # its process died before the row
    removed = remove_leftover_staging(app.settings.data_dir, store)
    assert sorted(removed) == sorted([done, old])
    left = {p.name for p in (app.settings.data_dir / "jobs").iterdir()}
    assert left == {queued, running, fresh}


def test_what_is_not_a_job_folder_is_left_alone(app: BaseApp, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("not the app's")
    jobs = app.settings.data_dir / "jobs"
    _staged(app, "lost+found", age_seconds=7200)
    (jobs / ("c" * 32)).symlink_to(elsewhere)  # named as a job, but a link
    os.utime(jobs / ("c" * 32), (0, 0), follow_symlinks=False)
    assert remove_leftover_staging(app.settings.data_dir, JobStore(app.engine), 0.0) == []
    assert (jobs / "lost+found").is_dir() and (elsewhere / "keep").exists()


def test_a_job_the_sweeper_cancels_leaves_no_staged_files(app: BaseApp) -> None:
    """A dead worker's job whose owner asked to cancel: the sweeper finishes it, and no
    worker will run it to remove its upload."""
    store = JobStore(app.engine)
    job_id = empty_job(app)
    assert store.claim(job_id, "killed", stall_seconds=30)
    store.request_cancel(job_id)
    folder = _staged(app, job_id)
    backdate(app, job_id, "heartbeat_at")  # its heartbeat stopped a minute ago
    sweeper = JobSweeper(store, 1.0, lambda _: None, data_dir=app.settings.data_dir)
    assert sweeper.sweep() == []
    assert store.get(job_id).status == JobStatus.CANCELLED  # type: ignore[union-attr]
    assert not folder.exists()


def test_an_upload_whose_row_may_have_been_written_keeps_its_files(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL's connection broke as the job's row was committed: the commit may have
    gone through, so the staged files stay for that job (removed later if there is none)."""

    def connection_lost(*args: object, **kwargs: object) -> None:
        try:
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        except psycopg.OperationalError as exc:
            raise OperationalError("COMMIT", {}, exc) from exc

    monkeypatch.setattr(JobStore, "create", connection_lost)
    upload = tmp_path / "upload.md"
    upload.write_text("Zorblax")
    with pytest.raises(OperationalError):
        app.jobs.submit_files(app.indices.get("My files"), "local", [("a.md", upload)], move=False)
    (kept,) = (app.settings.data_dir / "jobs").iterdir()
    assert (kept / "0").read_text() == "Zorblax"
    monkeypatch.undo()
    assert remove_leftover_staging(app.settings.data_dir, JobStore(app.engine), 0.0) == [kept.name]


def test_trouble_removing_staged_uploads_stops_neither_the_sweep_nor_the_queue(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*args: object, **kwargs: object) -> list[str]:
        raise PermissionError("jobs/: permission denied")

    monkeypatch.setattr(queues, "remove_leftover_staging", refused)
    store = JobStore(app.engine)
    stalled = empty_job(app)
    assert store.claim(stalled, "killed", stall_seconds=30)
    sweeper = JobSweeper(store, 0.0, lambda _: None, data_dir=app.settings.data_dir)
    assert sweeper.sweep() == [stalled]  # the jobs were swept all the same
    upload = tmp_path / "a.md"
    upload.write_text("Zorblax")
    job = app.jobs.submit_files(
        app.indices.get("My files"), "local", [("a.md", upload)], move=False
    )
    assert finished_job(app, job.id).status == JobStatus.DONE


# A `ragloom serve` that dies (os._exit, as SIGKILL or the OOM killer would end it) while
# it copies the second file of an HTTP API upload out of the request.
KILLED_IN_AN_UPLOAD = """
import os, sys
from pathlib import Path
import httpx
from ragloom_app.api import index_routes
from tests.helpers.api_server import replay_app, served

app = replay_app(Path(sys.argv[1]))
copies = []
copy = index_routes._copy_upload

def dying(source, target, *args):
    copies.append(1)
    if len(copies) == 2:
        target.write(b"part of it")
        target.flush()
        os._exit(9)
    return copy(source, target, *args)

index_routes._copy_upload = dying
with served(app) as url:
    files = [("files", ("a.md", b"# A\\n\\nalpha")), ("files", ("b.md", b"# B\\n\\nbeta"))]
    httpx.post(url.rstrip("/") + "/api/v1/indices/My files/files", files=files, timeout=30)
"""


def test_an_api_upload_a_killed_process_left_is_removed_once_stale(tmp_path: Path) -> None:
    path = os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    env = {k: v for k, v in env.items() if not k.startswith("RAGLOOM_")}
    command = [sys.executable, "-c", KILLED_IN_AN_UPLOAD, str(tmp_path)]
    killed = subprocess.run(command, env=env, cwd=PROJECT, capture_output=True, timeout=120)
    assert killed.returncode == 9, killed.stderr.decode()[-2000:]
    app = replay_app(tmp_path)  # the next start
    try:
        uploads = app.settings.data_dir / "uploads"
        (left,) = [p for p in uploads.iterdir() if p.name.startswith("api-upload-")]
        assert sorted(p.name for p in left.iterdir()) == ["0", "1"]
        ui_cache = uploads / "gradio-cache"  # the UI's upload cache shares the folder
        ui_cache.mkdir()
        (ui_cache / "notes.md").write_text("the UI's")
        sweeper = JobSweeper(
            JobStore(app.engine), 30.0, lambda job_id: None, data_dir=app.settings.data_dir
        )
        sweeper.sweep()
        assert left.is_dir()  # perhaps a request still copying it, for all a sweep knows
        an_hour_ago = time.time() - STAGING_GRACE_SECONDS - 60
        for path in (left, *left.iterdir(), ui_cache, *ui_cache.iterdir()):
            os.utime(path, (an_hour_ago, an_hour_ago))
        sweeper.sweep()
        assert not left.exists()
        assert (ui_cache / "notes.md").read_text() == "the UI's"
    finally:
        app.jobs.close()
