"""The disk holding the data folder fills up while a file is indexed (a small tmpfs as the
data folder): the file fails with a reason that says so, the app and its other files go
on, no store is left corrupt, and once space is freed the same file indexes.

Mounting a tmpfs needs root (CAP_SYS_ADMIN); without it the test is skipped, saying so."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.index.file import FileIndex
from tests.helpers.api_server import replay_app

SIZE_MB = 48


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE_MB}m,mode=0700", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(disk: Path, leave: int) -> Path:
    """A filler file that leaves ``leave`` bytes free on ``disk``."""
    filler = disk / "filler"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with filler.open("wb") as out:
        left = max(free - leave, 0)
        block = b"\0" * (1 << 20)
        while left > 0:
            out.write(block[: min(left, len(block))])
            left -= min(left, len(block))
    return filler


def _document(folder: Path, name: str, paragraphs: int) -> Path:
    path = folder / name
    path.write_text(
        "\n\n".join(
            f"Paragraph {n} of {name}: the Zorblax pressure gauge {n} reads {n * 3} bar."
            for n in range(paragraphs)
        ),
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    "room",
    [64 * 1024, 1024 * 1024],
    ids=["no-room-for-the-copy", "room-for-the-copy-not-the-stores"],
)
def test_a_full_disk_fails_the_file_clearly_and_the_index_recovers(
    small_disk: Path, tmp_path: Path, room: int
) -> None:
    app: BaseApp = replay_app(small_disk)
    index = app.indices.get("My files")
    assert isinstance(index, FileIndex)
    pipeline = index.get_indexing_pipeline({})
    outside = tmp_path / "docs"
    outside.mkdir()
    (first,) = pipeline.run([_document(outside, "first.md", 20)])
    assert first.status == "indexed"

    big = _document(outside, "big.md", 6000)  # about 0.5 MB of text, 6000 paragraphs
    filler = _fill(small_disk, leave=room)
    (full,) = pipeline.run([big])
    assert full.status == "failed", full
    assert "No space left on device" in (
        full.reason or ""
    ) or "disk holding the data folder is full" in (full.reason or ""), full.reason
    # Nothing half-stored counts: the failed file is recorded failed, the first one is
    # still indexed. (Chroma itself refuses reads until it has room to compact.)
    statuses = {s["name"]: s["status"] for s in index.list_sources()}
    assert statuses == {"first.md": "indexed", "big.md": "failed"}

    filler.unlink()
    # Once there is room, the stores agree again (what the failure left is repaired).
    report = index.check(repair=True)
    assert report.ok, report.to_dict()
    (again,) = index.get_indexing_pipeline({}).run([big])
    assert again.status == "indexed" and again.chunks > 100, again
    assert index.check().clean
    (retriever,) = index.get_retriever_pipelines({"retrieval_mode": "hybrid"})
    names = {hit.chunk.source_name for hit in retriever.run("What does gauge 7 read?", top_k=20)}
    assert names >= {"big.md"}
