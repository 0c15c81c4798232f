"""The app the job tests run on: the in-process queue on the ``database_url`` database
(SQLite, then PostgreSQL), a job counted as abandoned after 1 s without a heartbeat. A
module that needs another app defines its own ``app``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from tests.helpers.api_server import replay_app


@pytest.fixture
def app(tmp_path: Path, database_url: str) -> Iterator[BaseApp]:
    started = replay_app(tmp_path, database_url=database_url, job_stall_seconds=1.0)
    yield started
    started.jobs.close()
