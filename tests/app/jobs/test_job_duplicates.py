"""The same files uploaded twice, as two jobs at once. The second job waits for the files
the first holds: if the first is cancelled, the second indexes those its cancel took out
(before, it skipped them as "being indexed right now", and they were indexed nowhere); if
the second is cancelled while it waits, it ends at once, not after the wait."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.index.file.worklock import WorkLocks
from ragloom_app.jobs import JobView
from ragloom_app.testing import HashEmbeddings
from tests.helpers.api_server import replay_app
from tests.helpers.jobs import finished_job, numbered_documents


@pytest.fixture
def app(tmp_path: Path, database_url: str) -> Iterator[BaseApp]:
    started = replay_app(tmp_path, database_url=database_url, job_workers=2)
    yield started
    started.jobs.close()


class _Gates:
    """The first job's group (doc0 and doc1) held in its embedding until ``release``; a
    job that starts waiting for a busy copy sets ``waiting``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.held, self.release, self.waiting = (threading.Event() for _ in range(3))
        embed, wait = HashEmbeddings.embed_documents, WorkLocks.wait_until_free

        def gated(embeddings: HashEmbeddings, texts: Sequence[str]) -> np.ndarray:
            if any("code is 1000" in text for text in texts):
                self.held.set()
                assert self.release.wait(30)
            return embed(embeddings, texts)

        def noticed(*args: Any, **kwargs: Any) -> bool:
            self.waiting.set()
            return wait(*args, **kwargs)

        monkeypatch.setattr(HashEmbeddings, "embed_documents", gated)
        monkeypatch.setattr(WorkLocks, "wait_until_free", noticed)


def _second_job_waiting(
    app: BaseApp, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[_Gates, JobView, JobView]:
    """A job of doc0 and doc1 held in its embedding, and a second job of doc1 waiting for
    the first's copy of it."""
    doc0, doc1 = numbered_documents(folder / "in", 2)
    gates = _Gates(monkeypatch)
    index = app.indices.get("My files")
    first = app.jobs.submit_files(index, "local", [doc0, doc1], move=False)
    assert gates.held.wait(30)
    again = app.jobs.submit_files(index, "local", [doc1], move=False)
    assert gates.waiting.wait(30)
    return gates, first, again


def test_a_cancelled_job_does_not_lose_the_files_a_second_upload_of_them_waited_for(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gates, first, again = _second_job_waiting(app, tmp_path, monkeypatch)
    app.jobs.cancel(first.id, "local")
    gates.release.set()
    cancelled, done = finished_job(app, first.id), finished_job(app, again.id)
    index = app.indices.get("My files")
    assert cancelled.status == JobStatus.CANCELLED
    assert [(o["file"], o["status"]) for o in cancelled.outcomes] == [
        ("doc0.md", "indexed"),
        ("doc1.md", "cancelled"),
    ]
    assert done.status == JobStatus.DONE
    assert [(o["file"], o["status"]) for o in done.outcomes] == [("doc1.md", "indexed")]
    assert sorted(s["name"] for s in index.list_sources()) == ["doc0.md", "doc1.md"]
    assert index.check().clean


def test_a_job_waiting_for_a_busy_copy_is_cancelled_without_waiting_it_out(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gates, first, again = _second_job_waiting(app, tmp_path, monkeypatch)
    app.jobs.cancel(again.id, "local")
    cancelled = finished_job(app, again.id)  # while the first still holds doc1
    assert cancelled.status == JobStatus.CANCELLED
    assert [(o["file"], o["status"]) for o in cancelled.outcomes] == [("doc1.md", "cancelled")]
    gates.release.set()
    assert finished_job(app, first.id).status == JobStatus.DONE
    index = app.indices.get("My files")
    assert sorted(s["name"] for s in index.list_sources()) == ["doc0.md", "doc1.md"]
    assert index.check().clean
