"""A file whose copy another upload is indexing waits to see how that copy ends.

Two uploads of the same content at once (a user who sends a batch again because the
first looks slow) index it once: the second waits for the first's copy. If that copy ends
indexed, the second file is skipped as already there; if it does not (the first upload
cancelled, or the copy failed), the second file is indexed, not lost to a skip that
trusted a copy that never came. The waiting upload finishes its own files first, so two
uploads never wait for each other.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragloom.embeddings import EmbeddingsError
from ragloom_app.index.base import FileOutcome, IndexingProgress
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.pipeline import FileIndexingPipeline
from tests.helpers.file_index import one_chunk_documents


def _underway(
    index: FileIndex, path: Path, pipeline: FileIndexingPipeline | None = None
) -> Iterator[IndexingProgress | FileOutcome]:
    """An upload of ``path`` stopped as its file is being embedded: it holds the file."""
    events = (pipeline or index.get_indexing_pipeline({})).stream([path])
    for event in events:
        if isinstance(event, IndexingProgress) and event.message.startswith("embedding"):
            return events
    pytest.fail("the upload never reached its embedding")


class _Upload(threading.Thread):
    """An upload of ``paths`` in a thread of its own, as each job runs; its events kept."""

    def __init__(self, index: FileIndex, paths: list[Path]) -> None:
        super().__init__(daemon=True)
        self.pipeline = index.get_indexing_pipeline({})
        self.paths = paths
        self.events: list[IndexingProgress | FileOutcome] = []
        self.waiting = threading.Event()

    def run(self) -> None:
        for event in self.pipeline.stream(self.paths):
            self.events.append(event)
            if isinstance(event, IndexingProgress) and event.message.startswith("waiting"):
                self.waiting.set()

    @classmethod
    def waiting_for_a_copy(cls, index: FileIndex, paths: list[Path]) -> _Upload:
        """The upload started, once it waits for a copy another upload holds."""
        upload = cls(index, paths)
        upload.start()
        assert upload.waiting.wait(30)
        return upload

    def ended(self) -> list[tuple[str, str, str | None]]:
        """Its outcomes, once it has ended."""
        self.join(30)
        assert not self.is_alive()
        return self.outcomes

    @property
    def outcomes(self) -> list[tuple[str, str, str | None]]:
        return [(e.name, e.status, e.reason) for e in self.events if isinstance(e, FileOutcome)]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """Two documents; the second is what both uploads hold."""
    folder = tmp_path / "in"
    folder.mkdir()
    first, second = folder / "first.md", folder / "second.md"
    first.write_text("The first document says the Zorblax code is 1001.")
    second.write_text("The second document says the Zorblax code is 1002.")
    return first, second


def test_a_copy_whose_upload_is_cancelled_is_indexed_by_the_upload_that_waited(
    index: FileIndex, files: tuple[Path, Path]
) -> None:
    first, second = files
    underway = _underway(index, second)
    upload = _Upload.waiting_for_a_copy(index, [first, second])
    # Its own file before the copy is finished while it waits: it holds nothing.
    assert upload.outcomes == [("first.md", "indexed", None)]
    underway.close()  # the first upload is cancelled: its copy is taken out
    assert upload.ended() == [("first.md", "indexed", None), ("second.md", "indexed", None)]
    assert sorted(s["name"] for s in index.list_sources()) == ["first.md", "second.md"]
    assert index.check().clean


def test_a_copy_that_ends_indexed_makes_the_upload_that_waited_skip_it(
    index: FileIndex, files: tuple[Path, Path]
) -> None:
    _, second = files
    underway = _underway(index, second)
    upload = _Upload.waiting_for_a_copy(index, [second])
    assert [e.status for e in underway if isinstance(e, FileOutcome)] == ["indexed"]
    ((name, status, reason),) = upload.ended()
    assert (name, status) == ("second.md", "skipped")
    assert reason == "already indexed as 'second.md' (same content)"
    assert [s["name"] for s in index.list_sources()] == ["second.md"]
    assert index.check().clean


def test_a_copy_that_fails_is_indexed_by_the_upload_that_waited(
    index: FileIndex, files: tuple[Path, Path]
) -> None:
    _, second = files
    failing = index.get_indexing_pipeline({})

    def refused(chunks: Any) -> np.ndarray:
        raise EmbeddingsError("the model refused it")

    object.__setattr__(failing.ingestor, "embed", refused)
    underway = _underway(index, second, failing)
    upload = _Upload.waiting_for_a_copy(index, [second])
    assert [e.status for e in underway if isinstance(e, FileOutcome)] == ["failed"]
    assert upload.ended() == [("second.md", "indexed", None)]
    assert [(s["name"], s["status"]) for s in index.list_sources()] == [("second.md", "indexed")]
    assert index.check().clean


def test_a_copy_still_underway_past_the_wait_fails_the_file_saying_why(
    index: FileIndex, files: tuple[Path, Path]
) -> None:
    """How that copy will end is unknown: a skip would lose the file if it failed."""
    _, second = files
    underway = _underway(index, second)
    pipeline = index.get_indexing_pipeline({})
    pipeline.busy_wait_seconds = 0.2
    (outcome,) = pipeline.run([second])
    assert (outcome.status, outcome.reason) == (
        "failed",
        "the same content is still being indexed as 'second.md' after 0 s: add it again "
        "once that ends",
    )
    assert [e.status for e in underway if isinstance(e, FileOutcome)] == ["indexed"]
    assert index.check().clean


def test_two_uploads_of_the_same_files_in_opposite_orders_both_end(
    index: FileIndex, tmp_path: Path
) -> None:
    """Whatever the interleaving: neither waits while it holds a file, so both end, and
    each file ends indexed once."""
    paths = one_chunk_documents(tmp_path / "many", 6)
    uploads = [_Upload(index, paths), _Upload(index, paths[::-1])]
    for upload in uploads:
        upload.start()
    for upload in uploads:
        upload.ended()
    for path in paths:
        statuses = {
            status for upload in uploads for name, status, _ in upload.outcomes if name == path.name
        }
        assert statuses == {"indexed", "skipped"}, (path.name, statuses)
    sources = index.list_sources()
    assert sorted(s["name"] for s in sources) == [p.name for p in paths]
    assert {s["status"] for s in sources} == {"indexed"} and index.check().clean


def test_two_uploads_that_look_for_a_new_file_at_the_same_instant_index_it_once(
    index: FileIndex, files: tuple[Path, Path]
) -> None:
    """The second upload's look for a copy waits until the first's row is written: it
    then finds that copy (and waits for it) instead of finding none and indexing it too."""
    _, second = files
    first_upload, second_upload = _Upload(index, [second]), _Upload(index, [second])
    looked, go_on, second_looked = threading.Event(), threading.Event(), threading.Event()
    same_content = first_upload.pipeline._same_content

    def look_then_pause(digest: str) -> Any:
        found = same_content(digest)
        looked.set()  # the first upload found no copy; it writes its row once told to
        assert go_on.wait(30)
        return found

    def look(digest: str) -> Any:
        second_looked.set()
        return same_content(digest)

    first_upload.pipeline._same_content = look_then_pause  # type: ignore[method-assign]
    second_upload.pipeline._same_content = look  # type: ignore[method-assign]
    first_upload.start()
    assert looked.wait(30)
    second_upload.start()
    assert not second_looked.wait(1.0)  # it waits for the first upload's look to end
    go_on.set()
    assert first_upload.ended() == [("second.md", "indexed", None)]
    assert second_upload.ended() == [
        ("second.md", "skipped", "already indexed as 'second.md' (same content)")
    ]
    assert [s["name"] for s in index.list_sources()] == ["second.md"]
    assert index.check().clean
