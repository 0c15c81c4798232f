"""The same files uploaded twice, as two jobs at once, and the first job cancelled: every
file ends indexed once. The second job waits for the files the first holds, and indexes
those the first's cancel took out (before, it skipped them as "being indexed right now",
and they were indexed nowhere)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from ragloom_app.app import BaseApp
from ragloom_app.db.models import JobStatus
from ragloom_app.index.file import pipeline as pipeline_module
from ragloom_app.testing import HashEmbeddings
from tests.helpers.api_server import replay_app
from tests.helpers.jobs import finished_job, numbered_documents


@pytest.fixture
def app(tmp_path: Path, database_url: str) -> Iterator[BaseApp]:
    started = replay_app(tmp_path, database_url=database_url, job_workers=2)
    yield started
    started.jobs.close()


def test_a_cancelled_job_does_not_lose_the_files_a_second_upload_of_them_waited_for(
    app: BaseApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc0, doc1 = numbered_documents(tmp_path / "in", 2)
    # The first job's group (both files) is held in its embedding until released.
    embed, held, release = HashEmbeddings.embed_documents, threading.Event(), threading.Event()

    def gated(self: HashEmbeddings, texts: Sequence[str]) -> np.ndarray:
        if any("code is 1000" in text for text in texts):
            held.set()
            assert release.wait(30)
        return embed(self, texts)

    monkeypatch.setattr(HashEmbeddings, "embed_documents", gated)
    wait, waiting = pipeline_module.wait_until_free, threading.Event()

    def noticed(*args: object, **kwargs: object) -> bool:
        waiting.set()
        return wait(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline_module, "wait_until_free", noticed)
    index = app.indices.get("My files")
    first = app.jobs.submit_files(index, "local", [doc0, doc1], move=False)
    assert held.wait(30)
    again = app.jobs.submit_files(index, "local", [doc1], move=False)
    assert waiting.wait(30)  # the second job waits for doc1, which the first holds
    app.jobs.cancel(first.id, "local")
    release.set()
    cancelled, done = finished_job(app, first.id), finished_job(app, again.id)
    assert cancelled.status == JobStatus.CANCELLED
    assert [(o["file"], o["status"]) for o in cancelled.outcomes] == [
        ("doc0.md", "indexed"),
        ("doc1.md", "cancelled"),
    ]
    assert done.status == JobStatus.DONE
    assert [(o["file"], o["status"]) for o in done.outcomes] == [("doc1.md", "indexed")]
    assert sorted(s["name"] for s in index.list_sources()) == ["doc0.md", "doc1.md"]
    assert index.check().clean
