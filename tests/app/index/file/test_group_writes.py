"""How an upload's groups are written to the stores: the vectors of a group in one call
(file by file if that call fails), each file's full text and flip on its own, and the
last files of an upload embedded apart so that the group ahead is written meanwhile.

Real files into a real index (database, Chroma, the full text) with hash embeddings.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from ragloom.schema import Chunk
from ragloom_app.index.file import FileIndex, groups, source_steps
from ragloom_app.index.file.pipeline import FileIndexingPipeline
from tests.helpers.file_index import one_chunk_documents as _documents


def _group_of(*chunk_counts: int) -> groups.FileGroup:
    files = [
        groups.PreparedFile(
            source_id=f"s{n}",
            name=f"f{n}",
            digest=f"d{n}",
            chunks=[Chunk(f"s{n}-{i}", "text", f"s{n}", f"f{n}") for i in range(count)],
            held=contextlib.ExitStack(),
        )
        for n, count in enumerate(chunk_counts)
    ]
    return groups.FileGroup(files)


@pytest.mark.parametrize(
    ("chunks", "kept", "apart"),
    [
        ([7] * 10, [7] * 8, [7, 7]),  # 70 chunks: the files of at least 70/6 apart
        ([60, 5], [60], [5]),  # too few, but the first file is never taken
        ([5, 60], [5], [60]),  # a large last file goes apart alone
        ([10, 10, 10], [10, 10, 10], None),  # 30 chunks: written in a few tens of ms
        ([40], [40], None),  # one file: nothing to write while it embeds
    ],
)
def test_the_last_sixth_of_an_uploads_last_group_is_split_off(
    chunks: list[int], kept: list[int], apart: list[int] | None
) -> None:
    group = _group_of(*chunks)
    last = group.split_last()
    assert [len(f.chunks) for f in group.files] == kept
    assert (None if last is None else [len(f.chunks) for f in last.files]) == apart


def _vector_writes(pipeline: FileIndexingPipeline, fail_first: bool = False) -> list[int]:
    """The chunks of each write to the pipeline's vector store, as it goes on; with
    ``fail_first``, the first write raises (the store away for a moment)."""
    calls: list[int] = []
    store = pipeline.ingestor.vector_store
    original = store.add

    def counted(chunks: Any, vectors: Any) -> None:
        calls.append(len(chunks))
        if fail_first and len(calls) == 1:
            raise ConnectionError("the vector store is away for a moment")
        original(chunks, vectors)

    object.__setattr__(store, "add", counted)
    return calls


def test_a_groups_vectors_are_written_in_one_call(index: FileIndex, tmp_path: Path) -> None:
    """A write costs the store the same few ms whatever its size: one for the group."""
    pipeline = index.get_indexing_pipeline({})
    writes = _vector_writes(pipeline)
    outcomes = pipeline.run(_documents(tmp_path / "in", 5))
    assert [o.status for o in outcomes] == ["indexed"] * 5
    assert writes == [5]
    assert index.vector_store.count() == 5 and index.check().clean


def test_a_group_write_that_fails_is_done_file_by_file(index: FileIndex, tmp_path: Path) -> None:
    pipeline = index.get_indexing_pipeline({})
    writes = _vector_writes(pipeline, fail_first=True)
    outcomes = pipeline.run(_documents(tmp_path / "in", 3))
    assert [o.status for o in outcomes] == ["indexed"] * 3
    assert writes == [3, 1, 1, 1]
    assert index.vector_store.count() == 3 and index.check().clean


def test_a_file_of_a_group_that_fails_after_the_group_write_leaves_no_vectors(
    index: FileIndex, tmp_path: Path
) -> None:
    """The group's vectors are written at once; the middle file's full text then fails:
    that file fails alone, its vectors taken out, and the others are indexed."""
    pipeline = index.get_indexing_pipeline({})
    writes = _vector_writes(pipeline)
    fulltext = pipeline.ingestor.fulltext_store
    add = fulltext.add

    def refusing(chunks: Any) -> None:
        if chunks and chunks[0].source_name == "doc1.md":
            raise OSError("the full-text store refused it")
        add(chunks)

    object.__setattr__(fulltext, "add", refusing)
    outcomes = pipeline.run(_documents(tmp_path / "in", 3))
    assert [(o.name, o.status) for o in outcomes] == [
        ("doc0.md", "indexed"),
        ("doc1.md", "failed"),
        ("doc2.md", "indexed"),
    ]
    assert writes == [3]
    assert index.vector_store.count() == 2 and index.check().clean


def test_a_flip_committed_whose_reply_was_lost_keeps_the_file_indexed(
    index: FileIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database commits a file's flip, then the connection breaks before the reply:
    the file is indexed, and undoing its writes as for a failure would leave an indexed
    file without its vectors (a CI run found 5 such chunks after a PostgreSQL restart)."""
    record = source_steps.record_indexed

    def committed_then_lost(*args: Any, **kwargs: Any) -> Any:
        record(*args, **kwargs)
        raise OperationalError("COMMIT", {}, Exception("server closed the connection"))

    monkeypatch.setattr(source_steps, "record_indexed", committed_then_lost)
    (outcome,) = index.get_indexing_pipeline({}).run(_documents(tmp_path / "in", 1))
    assert (outcome.status, outcome.chunks) == ("indexed", 1)
    assert index.vector_store.count() == 1 and index.check().clean
