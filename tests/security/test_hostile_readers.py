"""Readers that crash, eat memory, never return or flood: each fails its own file alone.

Reading and chunking run in the readers sandbox, so the app process never runs a reader
itself: a segfault kills a worker, a hungry reader meets the worker's memory limit, a
sleeper is killed at the file's time budget, a flood of text meets the page-text budget
in the worker (the chunk budget, for text within that, is tests/core/test_indexing.py's).
The other files of the same upload are indexed, the app never pauses (a heartbeat thread
ticks throughout), and no worker keeps running the hostile file.
"""

from __future__ import annotations

import os
import time
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ragloom.chunking import (
    MAX_FILE_SECONDS,
    MAX_READER_REASON_CHARS,
    MIN_FILE_SECONDS,
    READERS_LIMITS,
    READERS_SANDBOX,
    file_seconds,
    warm_readers_sandbox,
)
from ragloom.loaders import default_readers
from ragloom.sandbox import configure_sandbox
from ragloom_app.index.base import FileOutcome
from ragloom_app.index.file import FileIndex
from tests.helpers.file_index import hash_file_index
from tests.helpers.heartbeat import Heartbeat
from tests.helpers.hostile_readers import (
    CountedSleepyReader,
    FloodReader,
    HungryReader,
    SegfaultReader,
    SleepyReader,
    WordyReader,
    worker_pid,
)

pytestmark = pytest.mark.security

# Lower than the default 2 GiB so that the hungry reader fills less of the test machine.
MEMORY_LIMIT = 768 << 20
# The first file a fresh worker reads pays its imports (a second; several on a loaded
# machine) within this budget: the worker that ran the sleeper is replaced by a cold one.
TIME_LIMIT = 10.0


@pytest.fixture
def index(tmp_path: Path) -> Iterator[FileIndex]:
    configure_sandbox(READERS_SANDBOX, READERS_LIMITS, memory_bytes=MEMORY_LIMIT)
    warm_readers_sandbox()
    readers = {
        **default_readers(),
        **{r.extensions[0]: r for r in (SegfaultReader(), HungryReader(), SleepyReader())},
        ".flood": FloodReader(),
    }
    yield hash_file_index(tmp_path / "data", readers, max_file_seconds=TIME_LIMIT)
    configure_sandbox(READERS_SANDBOX, READERS_LIMITS)


def _gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    return not os.path.exists(f"/proc/{pid}")


def test_each_hostile_reader_fails_its_own_file_and_the_next_file_indexes(
    index: FileIndex, tmp_path: Path
) -> None:
    upload = tmp_path / "upload"
    upload.mkdir()
    paths = []
    for number, extension in enumerate([".segv", ".hog", ".sleep", ".flood"]):
        hostile = upload / f"hostile{number}{extension}"
        hostile.write_text(str(upload / f"{number}.pid"))
        good = upload / f"good{number}.md"
        good.write_text(f"# Notes {number}\n\nThe harbour pump number {number} runs at night.\n")
        paths += [hostile, good]

    started = time.perf_counter()
    with Heartbeat() as beat:
        outcomes = {
            event.name: (event, time.perf_counter() - started)
            for event in index.get_indexing_pipeline({}).stream(paths)
            if isinstance(event, FileOutcome)
        }
    seconds = time.perf_counter() - started

    reasons = {name: o.reason for name, (o, _) in outcomes.items() if o.status == "failed"}
    assert set(reasons) == {"hostile0.segv", "hostile1.hog", "hostile2.sleep", "hostile3.flood"}, (
        reasons
    )
    assert reasons["hostile0.segv"] == (
        "the reader SegfaultReader crashed: the worker process died (signal SIGSEGV)"
    )
    assert reasons["hostile1.hog"] == "reading needed more memory than the 768 MiB limit per file"
    assert reasons["hostile2.sleep"] == (
        "reading and chunking took longer than 10 s, the limit per file"
    )
    # Ten million pages from a 75-byte file: refused by the text budget of small files.
    assert reasons["hostile3.flood"].startswith(
        "the .flood file would expand to more than 1,000,000 characters of text from "
    ), reasons["hostile3.flood"]
    for number in range(4):
        good, _ = outcomes[f"good{number}.md"]
        assert (good.status, good.chunks) == ("indexed", 1), good.reason
    assert beat.longest_pause < 0.5, beat.longest_pause
    # The worker that ran the sleeper was killed; the one that crashed is gone too.
    assert _gone(worker_pid(upload / "2.pid"))
    assert _gone(worker_pid(upload / "0.pid"))
    assert index.check().clean
    print(
        f"\nhostile readers: upload of 8 files in {seconds:.1f} s, longest pause "
        f"{beat.longest_pause * 1000:.0f} ms; "
        + ", ".join(f"{name} at {at:.1f} s" for name, (_, at) in outcomes.items())
    )


def test_copies_of_a_file_that_took_the_whole_time_fail_at_once(tmp_path: Path) -> None:
    # Each copy used to be read again: a zip of N copies held a worker N times the limit.
    # 6 s, not 2: good.md goes to a worker's first call, which imports what the fork server
    # did not preload; that took 2.7 s on a slow machine, and a limit of 2 s failed it.
    limit = 6.0
    readers = {**default_readers(), ".sleep": CountedSleepyReader()}
    index = hash_file_index(tmp_path / "data", readers, max_file_seconds=limit)
    reads = tmp_path / "reads.log"
    (tmp_path / "a.sleep").write_text(str(reads))
    bundle = tmp_path / "bundle.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        for number in range(5):
            archive.writestr(f"copy{number}.sleep", str(reads))
        archive.writestr("good.md", "# Good\n\nThe harbour pump runs at night.\n")
    outcomes = index.get_indexing_pipeline({}).run([tmp_path / "a.sleep", bundle])
    assert [(o.name, o.status) for o in outcomes] == [
        ("a.sleep", "failed"),
        *((f"bundle.zip/copy{number}.sleep", "failed") for number in range(5)),
        ("bundle.zip/good.md", "indexed"),
    ]
    timeout = "reading and chunking took longer than 6 s, the limit per file"
    assert outcomes[0].reason == timeout
    for copy in outcomes[1:6]:
        assert copy.reason == f"{timeout} (as 'a.sleep', the same content, earlier in this upload)"
    assert len(reads.read_text().splitlines()) == 1  # one time limit spent, not six
    assert {s["name"]: s["status"] for s in index.list_sources()} == {
        "a.sleep": "failed",
        "bundle.zip/good.md": "indexed",
    }
    assert index.check().clean
    # Another upload reads it again: a time limit met once may have been a busy machine.
    (again,) = index.get_indexing_pipeline({}).run([tmp_path / "a.sleep"])
    assert again.reason == timeout
    assert len(reads.read_text().splitlines()) == 2


def test_a_reader_that_cannot_cross_to_a_worker_fails_with_its_name(
    index: FileIndex, tmp_path: Path
) -> None:
    class LocalReader:
        extensions = (".local",)

        def read(self, path: Path) -> list:
            raise AssertionError("never run")

    readers = {**index.resources.readers, ".local": LocalReader()}
    index.resources = replace(index.resources, readers=readers)
    (tmp_path / "x.local").write_text("text")
    (tmp_path / "y.md").write_text("# Y\n\nA good file.\n")
    local, good = index.get_indexing_pipeline({}).run([tmp_path / "x.local", tmp_path / "y.md"])
    assert local.status == "failed"
    assert local.reason.startswith(
        "the reader LocalReader for '.local' files cannot run in the readers sandbox "
        "(it cannot be passed to a worker process: "
    )
    assert good.status == "indexed"


def test_a_readers_long_reason_is_cut_and_stays_its_reason(
    index: FileIndex, tmp_path: Path
) -> None:
    """A refusal of 2 MB once came back from the worker as the reader's failure, quoting
    the stored copy's hashed name, since the whole error was too large to cross."""
    readers = {**index.resources.readers, ".wordy": WordyReader()}
    index.resources = replace(index.resources, readers=readers)
    (tmp_path / "notes.wordy").write_text("text")
    (outcome,) = index.get_indexing_pipeline({}).run([tmp_path / "notes.wordy"])
    assert outcome.status == "failed" and outcome.reason is not None
    assert outcome.reason.startswith("the table of contents is broken: contents contents")
    assert len(outcome.reason) <= MAX_READER_REASON_CHARS and outcome.reason.endswith("…")
    (source,) = index.list_sources()
    assert source["reason"] == outcome.reason


def test_a_small_file_made_to_be_slow_is_stopped_sooner_than_a_large_one(tmp_path: Path) -> None:
    """Every file once had the whole MAX_FILE_SECONDS: a few kB made to be slow held a
    worker five minutes. A file now has MIN_FILE_SECONDS and 5 s more per MB."""
    readers = {**default_readers(), ".sleep": SleepyReader()}
    index = hash_file_index(tmp_path / "data", readers, max_file_seconds=60.0, min_file_seconds=1.0)
    small, larger = tmp_path / "small.sleep", tmp_path / "larger.sleep"
    small.write_text(str(tmp_path / "small.pid"))
    pid_file = str(tmp_path / "larger.pid")
    larger.write_text(pid_file + "\n" * (400_000 - len(pid_file)))  # 0.4 MB: 2 s
    started = time.perf_counter()
    outcomes = index.get_indexing_pipeline({}).run([small, larger])
    seconds = time.perf_counter() - started
    assert [(o.name, o.reason) for o in outcomes] == [
        (
            "small.sleep",
            "reading and chunking took longer than 1 s, the limit for a file this small",
        ),
        (
            "larger.sleep",
            "reading and chunking took longer than 2 s, the limit for a file of 0.4 MB",
        ),
    ]
    assert seconds < 20, seconds  # not the 60 s of MAX_FILE_SECONDS
    assert index.check().clean


def test_a_files_time_limit_grows_with_its_size_between_the_two_settings() -> None:
    assert file_seconds(75) == MIN_FILE_SECONDS == 60
    assert file_seconds(12_000_000) == 60  # 5 s a MB reaches the minimum at 12 MB
    assert file_seconds(30_000_000) == 150
    assert file_seconds(200_000_000) == MAX_FILE_SECONDS == 300  # the size limit's files
    assert file_seconds(30_000_000, max_seconds=100) == 100
    assert file_seconds(12_000_001) == 61  # whole seconds, rounded up
    assert file_seconds(75, max_seconds=10) == 10  # a lower maximum is the minimum too
