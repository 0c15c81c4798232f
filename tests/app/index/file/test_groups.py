"""Small files of one upload are embedded together, and still recorded one by one.

Each test indexes real files into a real index (database, Chroma, BM25) with hash
embeddings, and counts the calls that reach the embedding model.
"""

from __future__ import annotations

import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlmodel import Session, select

from ragloom.embeddings import EmbeddingsError
from ragloom_app.db.models import ChunkRecord, Source
from ragloom_app.index.base import FileOutcome, IndexingProgress
from ragloom_app.index.file import FileIndex, groups
from ragloom_app.index.file.pipeline import FileIndexingPipeline
from tests.helpers.file_index import one_chunk_documents as _documents


class Crash(BaseException):
    """Stops the pipeline where a crash would: nothing in it catches a BaseException."""


def _embed_calls(pipeline: FileIndexingPipeline) -> list[int]:
    """The chunks of each call of the pipeline's embedding, as it goes on."""
    calls: list[int] = []
    original = pipeline.ingestor.embed

    def counted(chunks: Any) -> np.ndarray:
        calls.append(len(chunks))
        return original(chunks)

    object.__setattr__(pipeline.ingestor, "embed", counted)
    return calls


def _outcomes(events: Iterator[IndexingProgress | FileOutcome]) -> list[FileOutcome]:
    return [e for e in events if isinstance(e, FileOutcome)]


def _statuses(index: FileIndex) -> dict[str, str]:
    return {s["name"]: s["status"] for s in index.list_sources()}


def test_small_files_are_embedded_in_one_call_and_each_recorded_alone(
    index: FileIndex, tmp_path: Path
) -> None:
    pipeline = index.get_indexing_pipeline({})
    calls = _embed_calls(pipeline)
    paths = _documents(tmp_path / "in", 5)
    events = list(pipeline.stream(paths))
    outcomes = _outcomes(iter(events))
    assert calls == [5]
    assert [(o.name, o.status, o.chunks) for o in outcomes] == [
        (p.name, "indexed", 1) for p in paths
    ]
    # Progress says what happens; files are reported once the whole group is embedded.
    progress = [(e.name, e.fraction, e.message) for e in events if isinstance(e, IndexingProgress)]
    assert progress == [
        *((f"doc{n}.md", n / 5, "reading") for n in range(5)),
        ("doc0.md", 0.8, "embedding 5 chunks of 5 files"),  # where the upload has got to
        *((f"doc{n}.md", 0.8, "indexed") for n in range(4)),
        ("doc4.md", 1.0, "indexed"),
    ]
    # Every chunk got the vector of its own text, not its neighbour's.
    with Session(index.resources.engine) as session:
        texts = {c.id: c.text for c in session.exec(select(ChunkRecord))}
    assert len(texts) == 5
    stored = index.vector_store.vectors(list(texts))
    embeddings = pipeline.ingestor.embeddings
    for chunk_id, text in texts.items():
        np.testing.assert_allclose(stored[chunk_id], embeddings.embed_documents([text])[0])
    assert index.check().clean


def _grouped(index: FileIndex, folder: Path, files: int) -> tuple[list[int], list[Any]]:
    """The chunk count of each embedding call while ``files`` documents are indexed, and
    the events; every file must end indexed."""
    pipeline = index.get_indexing_pipeline({})
    calls = _embed_calls(pipeline)
    events = list(pipeline.stream(_documents(folder, files)))
    assert [o.status for o in _outcomes(iter(events))] == ["indexed"] * files
    return calls, events


def test_a_group_is_embedded_once_it_holds_enough_chunks(
    index: FileIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(groups, "EMBED_GROUP_CHUNKS", 2)
    calls, events = _grouped(index, tmp_path / "in", 5)
    assert calls == [2, 2, 1]
    # A group is reported after the next files began; the progress never goes back.
    fractions = [e.fraction for e in events if isinstance(e, IndexingProgress)]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0


def test_an_uploads_first_group_is_smaller_so_the_model_starts_early(
    index: FileIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(groups, "FIRST_GROUP_CHUNKS", 1)
    monkeypatch.setattr(groups, "EMBED_GROUP_CHUNKS", 3)
    calls, _ = _grouped(index, tmp_path / "in", 6)
    assert calls == [1, 3, 2]


def test_the_next_files_are_read_while_a_group_embeds(
    index: FileIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(groups, "EMBED_GROUP_CHUNKS", 2)
    pipeline = index.get_indexing_pipeline({})
    read: list[str] = []
    chunk, embed = pipeline.ingestor.chunk, pipeline.ingestor.embed

    def reading(path: Path, source_id: str, name: str, **limits: Any) -> Any:
        read.append(name)
        return chunk(path, source_id, name, **limits)

    read_before: list[list[str]] = []

    def waiting_embed(chunks: Any) -> np.ndarray:
        if chunks[0].source_name == "doc0.md":  # the first group waits for the next one
            deadline = time.monotonic() + 30
            while len(read) < 4 and time.monotonic() < deadline:
                time.sleep(0.01)
        read_before.append(list(read))
        return embed(chunks)

    object.__setattr__(pipeline.ingestor, "chunk", reading)
    object.__setattr__(pipeline.ingestor, "embed", waiting_embed)
    outcomes = pipeline.run(_documents(tmp_path / "in", 4))
    assert read_before[0] == ["doc0.md", "doc1.md", "doc2.md", "doc3.md"]
    assert [(o.name, o.status) for o in outcomes] == [(f"doc{n}.md", "indexed") for n in range(4)]
    assert index.check().clean


def test_the_last_group_embeds_while_the_group_before_it_is_written(
    index: FileIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Written first, the group before would leave the model idle at the end of every upload.
    monkeypatch.setattr(groups, "EMBED_GROUP_CHUNKS", 2)
    pipeline = index.get_indexing_pipeline({})
    steps: list[str] = []
    embed, store = pipeline.ingestor.embed, pipeline.ingestor.vector_store
    write = store.add

    def embedding(chunks: Any) -> np.ndarray:
        steps.append(f"embed {[c.source_name for c in chunks]}")
        return embed(chunks)

    def writing(chunks: Any, vectors: np.ndarray) -> None:
        names = [c.source_name for c in chunks]
        if names[0] == "doc2.md":  # the group before the last: its writes wait for the model
            deadline = time.monotonic() + 10
            while "embed ['doc4.md']" not in steps and time.monotonic() < deadline:
                time.sleep(0.01)
        steps.append(f"write {names}")
        write(chunks, vectors)

    object.__setattr__(pipeline.ingestor, "embed", embedding)
    object.__setattr__(store, "add", writing)
    outcomes = pipeline.run(_documents(tmp_path / "in", 5))
    assert [(o.name, o.status) for o in outcomes] == [(f"doc{n}.md", "indexed") for n in range(5)]
    assert steps[-3:] == [
        "embed ['doc4.md']",  # the last group, while the one ahead of it is written
        "write ['doc2.md', 'doc3.md']",
        "write ['doc4.md']",
    ]
    assert index.check().clean


def test_the_last_files_of_an_upload_are_embedded_apart_to_be_written_sooner(
    index: FileIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(groups, "LAST_PIECE_MIN_GROUP", 2)
    calls, events = _grouped(index, tmp_path / "in", 7)
    assert calls == [5, 2]  # the files of the last sixth (7/6 chunks) apart; the rest at once
    fractions = [e.fraction for e in events if isinstance(e, IndexingProgress)]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert index.check().clean
    # A group of at most LAST_PIECE_MIN_GROUP chunks stays whole: 5 files, one call, in
    # test_small_files_are_embedded_in_one_call_and_each_recorded_alone.


def test_a_file_that_fails_keeps_its_place_in_the_upload(index: FileIndex, tmp_path: Path) -> None:
    first, second, third = _documents(tmp_path / "in", 3)
    empty = tmp_path / "in" / "empty.txt"
    empty.write_text("")
    pipeline = index.get_indexing_pipeline({})
    calls = _embed_calls(pipeline)
    outcomes = pipeline.run([first, empty, second, third])
    assert [(o.name, o.status) for o in outcomes] == [
        ("doc0.md", "indexed"),
        ("empty.txt", "failed"),
        ("doc1.md", "indexed"),
        ("doc2.md", "indexed"),
    ]
    assert calls == [1, 2]  # the group before the failure was reported first
    assert index.check().clean


def test_a_copy_of_a_file_still_in_the_group_is_skipped_as_already_indexed(
    index: FileIndex, tmp_path: Path
) -> None:
    (original,) = _documents(tmp_path / "in", 1)
    copy = tmp_path / "in" / "copy.md"
    copy.write_bytes(original.read_bytes())
    outcomes = index.get_indexing_pipeline({}).run([original, copy])
    assert [(o.status, o.reason) for o in outcomes] == [
        ("indexed", None),
        ("skipped", "already indexed as 'doc0.md' (same content)"),
    ]


def test_the_members_of_an_archive_join_the_group_of_the_files_around_it(
    index: FileIndex, tmp_path: Path
) -> None:
    pipeline = index.get_indexing_pipeline({})
    calls = _embed_calls(pipeline)
    before, after = _documents(tmp_path / "in", 2)
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for n in range(3):
            bundle.writestr(f"notes/m{n}.md", f"Member {n} says the Zorblax code is {2000 + n}.")
        bundle.writestr("notes/copy.md", "Member 0 says the Zorblax code is 2000.")
    outcomes = pipeline.run([before, archive, after])
    assert [(o.name, o.status) for o in outcomes] == [
        ("doc0.md", "indexed"),
        ("bundle.zip/notes/m0.md", "indexed"),
        ("bundle.zip/notes/m1.md", "indexed"),
        ("bundle.zip/notes/m2.md", "indexed"),
        ("bundle.zip/notes/copy.md", "skipped"),
        ("doc1.md", "indexed"),
    ]
    assert "already indexed as 'bundle.zip/notes/m0.md'" in (outcomes[4].reason or "")
    # The copy waits for its original's group; then the last file makes a group alone.
    assert calls == [4, 1]
    assert list((index.resources.data_dir / "tmp").iterdir()) == []  # the expansion is gone
    assert index.check().clean


def test_when_the_model_fails_each_file_of_the_group_fails_and_the_stores_stay_empty(
    index: FileIndex, tmp_path: Path
) -> None:
    pipeline = index.get_indexing_pipeline({})

    def broken(chunks: Any) -> np.ndarray:
        raise EmbeddingsError("the embedding endpoint answered 503 three times")

    object.__setattr__(pipeline.ingestor, "embed", broken)
    paths = _documents(tmp_path / "in", 3)
    outcomes = pipeline.run(paths)
    assert [o.status for o in outcomes] == ["failed"] * 3
    for outcome, path in zip(outcomes, paths, strict=True):
        assert outcome.reason is not None and path.name in outcome.reason
        assert "503 three times" in outcome.reason
    assert index.vector_store.count() == 0 and index.fulltext_store.ids() == set()
    assert index.check().clean
    # With the model back, the same files index.
    outcomes = index.get_indexing_pipeline({}).run(paths)
    assert [o.status for o in outcomes] == ["indexed"] * 3


def test_a_file_the_model_refuses_fails_alone_and_the_rest_of_its_group_indexes(
    index: FileIndex, tmp_path: Path
) -> None:
    pipeline = index.get_indexing_pipeline({})
    embed = pipeline.ingestor.embed

    def refusing(chunks: Any) -> np.ndarray:
        if any("1002" in c.text for c in chunks):
            raise EmbeddingsError("the endpoint refused an input (400)")
        return embed(chunks)

    object.__setattr__(pipeline.ingestor, "embed", refusing)
    outcomes = pipeline.run(_documents(tmp_path / "in", 5))
    assert [(o.name, o.status) for o in outcomes] == [
        (f"doc{n}.md", "failed" if n == 2 else "indexed") for n in range(5)
    ]
    assert "refused an input (400)" in (outcomes[2].reason or "")
    assert index.vector_store.count() == 4 and index.check().clean


def test_a_down_model_is_not_asked_again_for_every_file_of_the_group(
    index: FileIndex, tmp_path: Path
) -> None:
    pipeline = index.get_indexing_pipeline({})
    calls: list[int] = []

    def down(chunks: Any) -> np.ndarray:
        calls.append(len(chunks))
        raise EmbeddingsError("connection refused")

    object.__setattr__(pipeline.ingestor, "embed", down)
    outcomes = pipeline.run(_documents(tmp_path / "in", 6))
    assert [o.status for o in outcomes] == ["failed"] * 6
    assert calls == [6, 1, 1]  # the group, then two files alone failing the same way


def test_an_unforeseen_error_of_a_later_file_finishes_the_files_waiting_first(
    index: FileIndex, tmp_path: Path
) -> None:
    pipeline = index.get_indexing_pipeline({})
    find = pipeline._same_content
    looked: list[str] = []

    def locked(digest: str) -> Any:
        looked.append(digest)
        if len(looked) == 3:
            raise RuntimeError("database is locked")
        return find(digest)

    object.__setattr__(pipeline, "_same_content", locked)
    seen: list[FileOutcome] = []
    with pytest.raises(RuntimeError, match="database is locked"):
        for event in pipeline.stream(_documents(tmp_path / "in", 4)):
            if isinstance(event, FileOutcome):
                seen.append(event)
    assert [(o.name, o.status) for o in seen] == [("doc0.md", "indexed"), ("doc1.md", "indexed")]
    assert _statuses(index) == {"doc0.md": "indexed", "doc1.md": "indexed"}
    assert index.check().clean


def test_a_model_that_returns_too_few_vectors_fails_the_group_instead_of_misplacing_them(
    index: FileIndex, tmp_path: Path
) -> None:
    pipeline = index.get_indexing_pipeline({})
    embeddings = pipeline.ingestor.embeddings
    real = embeddings.embed_documents
    object.__setattr__(embeddings, "embed_documents", lambda texts: real(texts)[:-1])
    outcomes = pipeline.run(_documents(tmp_path / "in", 3))
    assert [o.status for o in outcomes] == ["failed"] * 3
    # The group's, then each file's alone (two in a row: the rest are not tried).
    reasons = [o.reason or "" for o in outcomes]
    assert [r.split(": ", 1)[1].split(" (log reference")[0] for r in reasons] == [
        "the embedding model returned 0 vectors for 1 chunks",
        "the embedding model returned 0 vectors for 1 chunks",
        "the embedding model returned 2 vectors for 3 chunks",
    ]
    assert index.vector_store.count() == 0 and index.check().clean


def test_an_upload_stopped_midway_takes_out_the_files_it_did_not_report(
    index: FileIndex, tmp_path: Path
) -> None:
    paths = _documents(tmp_path / "in", 4)
    events = index.get_indexing_pipeline({}).stream(paths)
    for event in events:
        if isinstance(event, FileOutcome):
            break  # the owner cancels once the first file is reported
    events.close()
    assert _statuses(index) == {"doc0.md": "indexed"}
    assert index.vector_store.count() == 1 and len(index.fulltext_store.ids()) == 1
    assert len(list(index.files_dir.iterdir())) == 1  # their copies are gone too
    assert index.check().clean


def test_an_upload_stopped_as_its_last_group_starts_takes_out_every_file_of_it(
    index: FileIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The last files are split from the group when it starts (LAST_PIECE_SHARE): a stop
    # right then must take them out too, and free their locks for the next upload.
    monkeypatch.setattr(groups, "LAST_PIECE_MIN_GROUP", 2)
    paths = _documents(tmp_path / "in", 7)
    events = index.get_indexing_pipeline({}).stream(paths)
    for event in events:
        if isinstance(event, IndexingProgress) and event.message.startswith("embedding"):
            break
    events.close()
    assert _statuses(index) == {}
    assert index.check().clean
    again = index.get_indexing_pipeline({}).run(paths)
    assert [o.status for o in again] == ["indexed"] * 7


def test_a_crash_while_a_group_is_stored_leaves_the_rest_to_the_recovery(
    index: FileIndex, tmp_path: Path
) -> None:
    pipeline = index.get_indexing_pipeline({})
    flip = pipeline._flip
    flips: list[str] = []

    def crashing_flip(source_id: str, chunks: Any) -> bool:
        flips.append(source_id)
        if len(flips) == 2:
            raise Crash("killed")
        return flip(source_id, chunks)

    object.__setattr__(pipeline, "_flip", crashing_flip)
    with pytest.raises(Crash):
        pipeline.run(_documents(tmp_path / "in", 3))
    with Session(index.resources.engine) as session:
        rows = {s.name: (s.status, s.attempts) for s in session.exec(select(Source))}
    assert rows == {
        "doc0.md": ("indexed", 1),
        "doc1.md": ("indexing", 1),  # the crash counts: the recovery retries it
        "doc2.md": ("indexing", 1),
    }
    # Their locks were dropped with the crash: the recovery takes them now.
    assert sorted(o.status for o in index.recover()) == ["indexed", "indexed"]
    assert set(_statuses(index).values()) == {"indexed"} and index.check().clean


def test_a_stop_while_a_group_embeds_takes_back_every_attempt_of_the_group(
    index: FileIndex, tmp_path: Path
) -> None:
    pipeline = index.get_indexing_pipeline({})

    def interrupted(chunks: Any) -> np.ndarray:
        raise KeyboardInterrupt

    object.__setattr__(pipeline.ingestor, "embed", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pipeline.run(_documents(tmp_path / "in", 3))
    with Session(index.resources.engine) as session:
        rows = sorted((s.status, s.attempts) for s in session.exec(select(Source)))
    assert rows == [("indexing", 0)] * 3  # a stop is not a failure of the files
    assert sorted(o.status for o in index.recover()) == ["indexed"] * 3
