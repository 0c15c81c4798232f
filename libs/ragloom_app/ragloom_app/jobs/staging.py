"""Where an upload's files wait for their job, and the removal of those no job will read.

An upload is copied into ``DATA_DIR/jobs/<job id>/`` before the job's row is written, so
the caller may delete its own copy; the job's worker reads it from there, and removes it
once the job is done, failed or cancelled. Some folders are left behind all the same:

- the process died between staging the files and writing the row;
- writing the row failed in a way that may still have written it (PostgreSQL's reply to
  the commit lost), so the files are kept for the job that may exist;
- the job ended where no worker removes its folder (a sweeper cancelling a dead worker's
  job).

:func:`remove_leftover_staging`, run by the sweepers at each turn, removes those: the
folders of finished jobs and of jobs that do not exist, the latter only once nothing has
been added to them for :data:`STAGING_GRACE_SECONDS` (an upload is still being copied
into a new folder before its row is written).

An HTTP API upload is first copied out of the request into a folder of its own
(``DATA_DIR/uploads/api-upload-*``), which the request removes once its job has the
files; a process killed while it copies leaves it. :func:`remove_leftover_api_uploads`,
run by the sweepers too, removes such a folder once nothing in it has changed for
:data:`STAGING_GRACE_SECONDS`.
"""

from __future__ import annotations

import logging
import re
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ragloom_app.jobs.view import FINAL

if TYPE_CHECKING:
    from ragloom_app.jobs.store import JobStore

__all__ = [
    "API_UPLOAD_PREFIX",
    "STAGING_GRACE_SECONDS",
    "api_upload_root",
    "discard_staging",
    "remove_leftover_api_uploads",
    "remove_leftover_staging",
    "staging_dir",
]

logger = logging.getLogger(__name__)

_JOB_ID = re.compile(r"[0-9a-f]{32}")  # uuid4().hex: the ids JobService gives

STAGING_GRACE_SECONDS = 3600.0
"""How long a staging folder with no job row is kept after its last change: longer than
copying any upload takes, and than the clocks of the machines sharing the folder differ."""


API_UPLOAD_PREFIX = "api-upload-"
"""How the folder an HTTP API upload is copied into begins (:func:`api_upload_root`)."""


def api_upload_root(data_dir: Path) -> Path:
    """Where the HTTP API copies an upload out of its request, before its job is made
    (shared with the UI's upload cache: only :data:`API_UPLOAD_PREFIX` folders are ours)."""
    return data_dir / "uploads"


def staging_dir(data_dir: Path, job_id: str) -> Path:
    """Where the files of an upload wait for their job (shared by the job's workers)."""
    return data_dir / "jobs" / job_id


def discard_staging(data_dir: Path, job_id: str) -> None:
    """Remove a job's staged upload, if it is there: its job is over, or was never written.

    Never raises: a folder that cannot be removed now is left to
    :func:`remove_leftover_staging`.
    """
    shutil.rmtree(staging_dir(data_dir, job_id), ignore_errors=True)


def remove_leftover_staging(
    data_dir: Path, store: JobStore, grace_seconds: float = STAGING_GRACE_SECONDS
) -> list[str]:
    """Remove the staging folders no job will read; the job ids whose folders went.

    Only folders named as jobs are (32 hexadecimal digits) are looked at, never through a
    symbolic link: anything else under ``jobs/`` is not the app's to remove.
    """
    root = data_dir / "jobs"
    try:
        entries = list(root.iterdir())
    except FileNotFoundError:
        return []
    folders = {
        entry.name: entry
        for entry in entries
        if _JOB_ID.fullmatch(entry.name) and not entry.is_symlink() and entry.is_dir()
    }
    if not folders:
        return []
    statuses = store.statuses(list(folders))
    cutoff = time.time() - grace_seconds
    removed = []
    for job_id, folder in sorted(folders.items()):
        status = statuses.get(job_id)
        if status is not None and status not in FINAL:
            continue  # queued or running: its worker reads it
        try:
            if status is None and folder.stat().st_mtime > cutoff:
                continue  # perhaps an upload whose row is about to be written
        except FileNotFoundError:
            continue
        if _removed(folder, "staged upload"):
            removed.append(job_id)
    if removed:
        logger.info("removed the staged files of %d jobs no worker will run", len(removed))
    return removed


def _removed(folder: Path, what: str) -> bool:
    """Remove ``folder`` (a leftover ``what``); whether it is gone by this call. One its
    owner removed just now is not; one that cannot be removed is logged and kept."""
    try:
        shutil.rmtree(folder)
    except FileNotFoundError:
        return False  # its worker or request removed it just now
    except OSError:
        logger.warning("could not remove the %s %s", what, folder, exc_info=True)
        return False
    return True


def remove_leftover_api_uploads(
    data_dir: Path, grace_seconds: float = STAGING_GRACE_SECONDS
) -> list[str]:
    """Remove the API upload folders (:data:`API_UPLOAD_PREFIX`) in which nothing has
    changed for ``grace_seconds``: left by a process killed while it copied an upload (a
    live request removes its own); the names of those removed. Never through a symbolic
    link, and nothing else of the folder (the UI's upload cache)."""
    try:
        entries = list(api_upload_root(data_dir).iterdir())
    except FileNotFoundError:
        return []
    cutoff = time.time() - grace_seconds
    removed = []
    for folder in sorted(entries):
        if not folder.name.startswith(API_UPLOAD_PREFIX) or folder.is_symlink():
            continue
        try:
            if not folder.is_dir() or _last_change(folder) > cutoff:
                continue  # perhaps a request still copying it
        except FileNotFoundError:
            continue
        if _removed(folder, "API upload folder"):
            removed.append(folder.name)
    if removed:
        logger.info("removed %d API upload folders left by a stopped process", len(removed))
    return removed


def _last_change(folder: Path) -> float:
    """The latest modification time of ``folder`` and of the files in it: a file being
    copied changes its own time, not its folder's."""
    return max([folder.stat().st_mtime, *(entry.stat().st_mtime for entry in folder.iterdir())])
