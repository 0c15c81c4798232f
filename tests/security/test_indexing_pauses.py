"""Indexing and removing a large file never pauses the rest of the app for long.

Reading and chunking run in the readers sandbox, but writing to Chroma runs in the app:
its Rust core keeps the GIL for the whole of a call, so one upsert of thousands of chunks
(or a delete by filter) froze every other thread, the UI's included, for seconds. Writes
and deletes go in calls of ``ROWS_PER_WRITE`` rows; a heartbeat thread is never held
more than 0.5 s while a file of some 3,000 chunks is indexed and removed. Held, not
merely paused: the gaps are counted by what the process ran during them
(``Heartbeat.longest_held_pause``), since on a loaded machine the OS alone keeps the
whole process off the cores for that long (0.94 s wall was seen with a benchmark's
llama.cpp beside the test suite); a call that keeps the GIL for seconds runs for seconds.
(The heartbeat also freezes the earlier tests' heap: see ``tests/helpers/heartbeat.py``.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragloom_app.index.base import FileOutcome
from tests.helpers.file_index import hash_file_index
from tests.helpers.heartbeat import Heartbeat

pytestmark = pytest.mark.security


def test_a_file_of_thousands_of_chunks_is_indexed_and_removed_without_freezing(
    tmp_path: Path,
) -> None:
    index = hash_file_index(tmp_path / "data")
    document = tmp_path / "records.json"
    document.write_text(json.dumps({f"record {i}": list(range(1000)) for i in range(200)}))
    with Heartbeat() as indexing:
        outcomes = [
            e
            for e in index.get_indexing_pipeline({}).stream([document])
            if isinstance(e, FileOutcome)
        ]
    (outcome,) = outcomes
    assert outcome.status == "indexed" and outcome.chunks > 2000, outcome
    assert indexing.longest_held_pause < 0.5, (indexing.longest_held_pause, indexing.longest_pause)
    with Heartbeat() as removing:
        assert index.remove_source(str(outcome.source_id))
    assert removing.longest_held_pause < 0.5, (removing.longest_held_pause, removing.longest_pause)
    assert index.list_sources() == [] and index.check().clean
