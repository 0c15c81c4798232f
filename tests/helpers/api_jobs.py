"""Following an indexing job through ``/api/v1/jobs`` the way an API client does.

An upload answers 202 with its job; the files appear in the index's listing only once
the job reaches them, so a client waits on the job, not on the listing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

__all__ = ["finished_job"]

Get = Callable[[str], httpx.Response]


def finished_job(get: Get, job_id: str, timeout: float = 120) -> dict[str, Any]:
    """The job ``job_id`` once it has finished, as ``GET /jobs/{id}`` answers it;
    ``get`` sends a GET to a path under ``/api/v1``. An assertion past ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        response = get(f"/jobs/{job_id}")
        assert response.status_code == 200, response.text
        job: dict[str, Any] = response.json()
        if job["status"] not in ("queued", "running"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
