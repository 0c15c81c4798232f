"""UploadBudget: what one upload may still spend, and the reasons once it cannot."""

from __future__ import annotations

from pathlib import Path

from ragloom.chunking import PER_FILE
from ragloom_app.index.budget import MAX_UPLOAD_BYTES, MAX_UPLOAD_CHUNKS, UploadBudget


def test_defaults() -> None:
    budget = UploadBudget()
    assert (budget.max_bytes, budget.max_chunks) == (MAX_UPLOAD_BYTES, MAX_UPLOAD_CHUNKS)
    assert (MAX_UPLOAD_BYTES, MAX_UPLOAD_CHUNKS) == (2 << 30, 100_000)
    assert budget.used_up() is None


def test_bytes_are_spent_only_when_they_fit(tmp_path: Path) -> None:
    budget = UploadBudget(max_bytes=3000, max_chunks=10)
    assert budget.spend_bytes(2000) is None
    refused = budget.spend_bytes(1500)
    assert refused == (
        "the upload's budget of 2.9 KB (its files and what its archives unpack to) has "
        "1000 bytes left, less than the 1.5 KB of this file; add it in another upload"
    )
    assert budget.bytes_left == 1000
    path = tmp_path / "a.md"
    path.write_bytes(b"x" * 1000)
    assert budget.spend_file(path) is None
    assert budget.used_up() == (
        "the upload's budget of 2.9 KB (its files and what its archives unpack to) is used "
        "up; add this file in another upload"
    )
    assert budget.spend_file(path) == budget.used_up()


def test_the_chunk_limit_is_the_smaller_of_the_files_and_what_is_left() -> None:
    budget = UploadBudget(max_chunks=100)
    assert budget.chunk_limit(40) == (40, PER_FILE)
    budget.spend_chunks(70)
    assert budget.chunk_limit(40) == (30, "what is left of the upload's budget of 100 chunks")
    budget.spend_chunks(30)
    assert budget.used_up() == (
        "the upload's budget of 100 chunks is used up; add this file in another upload"
    )


def test_a_file_skipped_as_already_indexed_spends_nothing(tmp_path: Path) -> None:
    from tests.helpers.file_index import hash_file_index

    index = hash_file_index(tmp_path / "data", max_upload_bytes=150)
    old, new = tmp_path / "old.md", tmp_path / "new.md"
    old.write_text("# Old\n\n" + "The old notes say the pump runs at night. " * 2)
    new.write_text("# New\n\n" + "The new notes say the pump runs by day. " * 2)
    assert index.get_indexing_pipeline({}).run([old])[0].status == "indexed"
    # The same old file again (skipped) leaves the whole budget to the new one.
    outcomes = index.get_indexing_pipeline({}).run([old, new])
    assert [o.status for o in outcomes] == ["skipped", "indexed"], outcomes


def test_a_content_over_a_budget_is_remembered_as_its_reader_read_it() -> None:
    """The reader goes by the extension: the same bytes over the text budget as JSON (each
    value under its whole key path) may read well within it as plain text."""
    budget = UploadBudget()
    budget.note_over_budget("d1", "data.json", "too much text")
    assert budget.failed_before("d1", "copy.JSON") == (
        "too much text (as 'data.json', the same content, earlier in this upload)"
    )
    assert budget.failed_before("d1", "data.txt") is None
    assert budget.failed_before("d2", "data.json") is None
