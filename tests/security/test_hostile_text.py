"""Text amplification and quadratic chunking: crafted files fail or chunk within bounds, fast.

Each crafted file is read and chunked in a sandbox worker (``ragloom.sandbox``, with an
address-space limit, one worker per file), as the app's readers run: a regression that
makes one unbounded meets the worker's memory limit or timeout instead of the test
machine. Inside the worker a heartbeat thread ticks beside the reading and chunking, so
the longest pause of other threads of that process is measured too (in the CPU time the
worker spent during a gap, so that a machine busy with other work does not count as the
worker holding the GIL); the test process runs its own heartbeat meanwhile (the app
serving other users), judged in wall time. Before the fixes these files
expanded to between 1 and 210 GB of text or took hours to days.
"""

from __future__ import annotations

import base64
import logging
import random
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragloom.loaders import LoaderError, read_file
from ragloom.sandbox import Sandbox, SandboxLimits
from ragloom.splitters import TokenSplitter, approximate_token_count
from tests.helpers.heartbeat import Heartbeat
from tests.helpers.pdfs import make_form_pdf, make_inflating_pdf

pytestmark = pytest.mark.security

logger = logging.getLogger(__name__)

CHUNK_SIZE = 240
CHAR_CAP = CHUNK_SIZE * TokenSplitter().max_chars_per_token
MEMORY_LIMIT = 768 << 20
# Generous for a loaded CI machine: each file below takes at most a few seconds here.
TIME_LIMIT = 60.0


def read_and_chunk(path: str) -> dict[str, Any]:
    """In the worker: read and chunk ``path`` beside a heartbeat; what came of it."""
    started = time.perf_counter()
    outcome: dict[str, Any] = {"refused": None}
    with Heartbeat() as beat:
        try:
            pages = read_file(Path(path))
        except LoaderError as exc:
            outcome["refused"] = exc.reason
        else:
            splitter = TokenSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=36)
            chunks = splitter(pages, source_id="hostile", source_name=Path(path).name)
            outcome |= {
                "chars": sum(len(page.text) for page in pages),
                "chunks": len(chunks),
                "longest_chunk": max(len(chunk.text) for chunk in chunks),
                "most_tokens": max(approximate_token_count(chunk.text) for chunk in chunks),
                "covered": sum(len(chunk.text) for chunk in chunks),
            }
    outcome["seconds"] = time.perf_counter() - started
    outcome["worker_pause"] = beat.longest_held_pause
    outcome["worker_wall_pause"] = beat.longest_pause
    outcome["peak_mb"] = _peak_resident_mb()
    return outcome


def _peak_resident_mb() -> int:
    """This process's peak resident memory since it started its program, in MiB."""
    # Not ru_maxrss: Linux keeps it across exec, so a spawned worker would report the peak
    # of the process that started it (the test process, after other tests).
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    # A fresh worker per file, so that its peak memory is that file's.
    box = Sandbox(
        "hostile-text",
        SandboxLimits(workers=1, tasks_per_worker=1, memory_bytes=MEMORY_LIMIT),
    )
    yield box
    box.close()


def _run(sandbox: Sandbox, path: Path) -> dict[str, Any]:
    started = time.perf_counter()
    with Heartbeat() as beat:
        outcome = sandbox.run(read_and_chunk, str(path), timeout=TIME_LIMIT)
    outcome["wall_seconds"] = time.perf_counter() - started
    outcome["caller_pause"] = beat.longest_pause
    logger.info("%s (%d bytes): %s", path.name, path.stat().st_size, outcome)
    # The calling process (the app) never waited on the hostile file.
    assert beat.longest_pause < 0.5
    assert outcome["seconds"] < TIME_LIMIT
    assert outcome["peak_mb"] < 512
    return outcome


def _chunked_within_bounds(outcome: dict[str, Any]) -> None:
    assert outcome["refused"] is None
    assert outcome["longest_chunk"] <= CHAR_CAP
    assert outcome["most_tokens"] <= CHUNK_SIZE


def test_a_10_kb_header_over_many_rows_is_refused_at_the_budget(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # 100 columns named with 100 characters each, 20,000 rows of one-character values:
    # 4 MB that used to become 210 million characters (10.5 kB of names on every row).
    path = tmp_path / "wide.csv"
    header = ",".join(f"{i:03d}" + "h" * 97 for i in range(100))
    path.write_text(header + "\n" + (",".join("1" * 100) + "\n") * 20_000)
    outcome = _run(sandbox, path)
    assert outcome["refused"] == (
        "the CSV file would expand to more than 64,000,000 characters of text from 3.8 MB; "
        "the limit is 64,000,000 characters per file"
    )
    assert outcome["worker_pause"] < 0.5


def test_a_10_kb_header_over_many_rows_is_read_abbreviated(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # One column named with 10 kB over 100,000 rows: 1 GB of text before, 5.1 million
    # characters now (its name cut to 48), under 32 times the file's size.
    path = tmp_path / "long-header.csv"
    path.write_text("n" * 10_000 + "\n" + "1\n" * 100_000)
    outcome = _run(sandbox, path)
    _chunked_within_bounds(outcome)
    assert outcome["chars"] == 100_000 * len("n" * 47 + "…: 1\n") - 1
    assert outcome["chars"] <= 32 * path.stat().st_size
    assert outcome["worker_pause"] < 0.5


def test_a_deeply_keyed_json_is_read_with_short_paths(sandbox: Sandbox, tmp_path: Path) -> None:
    # 900 nested keys of 1,000 characters, then 100,000 numbers: each number's path was
    # 900 kB (90 GB of text, and as much again built while walking); now at most 48.
    path = tmp_path / "deep.json"
    opening = "".join(f'{{"{i:03d}{"k" * 997}":' for i in range(900))
    path.write_text(opening + "[" + ",".join(["7"] * 100_000) + "]" + "}" * 900)
    outcome = _run(sandbox, path)
    _chunked_within_bounds(outcome)
    assert outcome["chars"] < 60 * 100_000
    assert outcome["worker_pause"] < 0.5


@pytest.mark.parametrize("kind", ["base64", "one letter"])
def test_a_10_mb_line_without_whitespace_chunks_in_linear_time(
    sandbox: Sandbox, tmp_path: Path, kind: str
) -> None:
    # Cut by bisecting the whole rest of the line for each chunk, 10 MB of base64 took
    # days with the model's counter (200 kB: 73 s); the approximate count, like the
    # model's WordPiece, sees one token in a run of letters, which made one 10 MB chunk.
    size = 10_000_000
    if kind == "base64":
        text = base64.b64encode(random.Random(3).randbytes(size * 3 // 4)).decode()[:size]
    else:
        text = "a" * size
    path = tmp_path / "line.txt"
    path.write_text(text)
    outcome = _run(sandbox, path)
    _chunked_within_bounds(outcome)
    assert outcome["covered"] == size  # no overlap inside a run: every character, once
    assert outcome["worker_pause"] < 0.5


def test_a_run_of_full_stops_does_not_stall_the_sentence_splitter(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # "....x": the sentence-end pattern backtracked over the run once per stop (25 s for
    # 40 kB, holding the GIL); 1 MB of it would have taken about 4 hours.
    path = tmp_path / "dots.txt"
    path.write_text("." * 1_000_000 + "x and the rest. Of a document.")
    outcome = _run(sandbox, path)
    _chunked_within_bounds(outcome)
    assert outcome["worker_pause"] < 0.5


@pytest.mark.parametrize("start", [',"' * 200_000, ',"a",' + "," * 400_000])
def test_quotes_and_commas_do_not_stall_the_csv_sniffer(
    sandbox: Sandbox, tmp_path: Path, start: str
) -> None:
    # The sniffer's patterns are quadratic in its sample, holding the GIL: 12 s on 64 KiB
    # of ',"' and 17 s on a quoted field and 64 KiB of ',' (no newline: the whole sample).
    # It sees 4 KiB now.
    path = tmp_path / "quotes.csv"
    path.write_text(start + "\n1,2\n")
    outcome = _run(sandbox, path)
    assert outcome["refused"] is None or "CSV" in outcome["refused"]
    assert outcome["seconds"] < 5
    assert outcome["worker_pause"] < 0.5


def test_a_page_of_meta_tags_is_refused_quickly(sandbox: Sandbox, tmp_path: Path) -> None:
    # bs4's <meta charset> search took 110 s on this (9.6 MB); bs4 itself would then need
    # gigabytes for 1.6 million elements.
    path = tmp_path / "meta.html"
    path.write_bytes(b"<meta " * 1_600_000)
    outcome = _run(sandbox, path)
    assert outcome["refused"] == (
        "the page has more than 250,000 HTML elements; the limit is 250,000"
    )
    assert outcome["seconds"] < 5
    assert outcome["worker_pause"] < 0.5


def test_a_small_pdf_drawing_a_form_thousands_of_times_is_refused(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # 2 kB whose one page draws a 1 MB form 5,000 times: 5 billion characters of text for
    # pypdf alone (200 draws took 117 s and 464 MB); refused once the page crosses the
    # file's budget.
    path = tmp_path / "form.pdf"
    path.write_bytes(make_form_pdf("a" * 1_000_000, draws=5_000))
    outcome = _run(sandbox, path)
    assert outcome["refused"] is not None
    assert outcome["refused"].startswith(
        "the PDF file would expand to more than 1,000,000 characters of text from"
    )
    assert outcome["seconds"] < 10
    assert outcome["worker_pause"] < 0.5


def test_a_pdf_stream_that_inflates_past_pypdf_limit_is_refused(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # 78 kB of Flate that would inflate to 80 MB of text: pypdf stops at 75 MB.
    path = tmp_path / "inflate.pdf"
    path.write_bytes(make_inflating_pdf(80_000_000))
    outcome = _run(sandbox, path)
    assert outcome["refused"].startswith(
        "not a valid PDF: it is past one of pypdf's safety limits (a decompression bomb?): "
        "Limit reached while decompressing."
    )
    assert outcome["worker_pause"] < 0.5
