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

__all__ = ["STAGING_GRACE_SECONDS", "discard_staging", "remove_leftover_staging", "staging_dir"]

logger = logging.getLogger(__name__)

_JOB_ID = re.compile(r"[0-9a-f]{32}")  # uuid4().hex: the ids JobService gives

STAGING_GRACE_SECONDS = 3600.0
"""How long a staging folder with no job row is kept after its last change: longer than
copying any upload takes, and than the clocks of the machines sharing the folder differ."""


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
            shutil.rmtree(folder)
        except FileNotFoundError:
            continue  # its worker removed it just now
        except OSError:
            logger.warning("could not remove the staged upload %s", folder, exc_info=True)
            continue
        removed.append(job_id)
    if removed:
        logger.info("removed the staged files of %d jobs no worker will run", len(removed))
    return removed
