"""A file that kills the indexing process must not crash-loop the app (docs/cli.md).

The crafted input: a Markdown file holding a marker on which the embeddings (run in the
indexing process, outside any sandbox) SIGKILL their own process, as the OOM killer or a
crash in a native library would (tests/helpers/crashing_embeddings.py). Real ``ragloom``
processes, real SQLite, Chroma and BM25. What must hold afterwards:

- ``ragloom index list``, ``index check`` and ``index remove`` return at once, and never
  call the embeddings (so nothing is indexed again at start);
- ``ragloom serve`` listens and serves before it retries the file, in the background;
- the file is retried once, then failed with the reason, and never tried again.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragloom_app.index.file.recovery import GAVE_UP_REASON
from tests.helpers.cli import run_ragloom
from tests.helpers.crashing_embeddings import MARKER, read_calls
from tests.helpers.ports import free_port

pytestmark = pytest.mark.security

PROJECT = Path(__file__).resolve().parents[2]
GOOD = "# Pumps\n\nThe harbour pumps move seawater uphill at night when power is cheap.\n"
BAD = f"# Trap\n\nThis page looks harmless. {MARKER}\n\nBut embedding it kills the process.\n"
WAITING = (
    "interrupted; indexed again when `ragloom serve` starts, or by `ragloom index check --repair`"
)
#: Generous: a command starts Python and imports the app (about 2 s here, more when the
#: machine is busy). A command that indexed the file again would be SIGKILLed instead.
QUICK_SECONDS = 30.0
SETTINGS = """
EMBEDDINGS = {{"crashing": {{
    "class": "tests.helpers.crashing_embeddings.CrashingEmbeddings", "calls_file": {calls!r},
}}}}
DEFAULT_EMBEDDING = "crashing"
LLMS = {{"replay": {{"class": "ragloom.llms.replay.ReplayLLM", "replies": ["Pumps."]}}}}
DEFAULT_LLM = "replay"
FIRST_RUN_DOCS = None
"""


@dataclass
class Ragloom:
    """``ragloom`` commands over one data folder, with the crashing embeddings."""

    root: Path

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def calls(self) -> Path:
        return self.root / "embedding-calls.jsonl"

    def env(self, **extra: str) -> dict[str, str]:
        # Only this test's settings: a RAGLOOM_LLM of the caller's must not apply.
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
        settings = self.root / "crash_settings.py"
        settings.write_text(SETTINGS.format(calls=str(self.calls)), encoding="utf-8")
        path = os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")])
        return {
            **inherited,
            "PYTHONPATH": path,  # for tests.helpers
            "RAGLOOM_SETTINGS": str(settings),
            "RAGLOOM_DATA_DIR": str(self.data_dir),
            **extra,
        }

    def run(self, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
        """Run a command to its end; returns it and how long it took."""
        started = time.perf_counter()
        done = run_ragloom(*args, env=self.env(), timeout=300, cwd=self.root)
        return done, time.perf_counter() - started

    def serve(self, port: int) -> subprocess.Popen[bytes]:
        log = (self.root / f"serve-{port}.log").open("wb")
        return subprocess.Popen(
            [sys.executable, "-m", "ragloom_app.cli", "serve", "--port", str(port)],
            env=self.env(RAGLOOM_TEST_PORT=str(port)),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.root,
        )

    def log_of(self, port: int) -> str:
        return (self.root / f"serve-{port}.log").read_text(errors="replace")

    def sources(self) -> dict[str, tuple[str, int, str | None]]:
        """File name -> (status, attempts, reason), straight from the database."""
        with sqlite3.connect(self.data_dir / "ragloom.db", timeout=10) as conn:
            rows = conn.execute("SELECT name, status, attempts, reason FROM sources")
            return {name: (status, attempts, reason) for name, status, attempts, reason in rows}

    def marker_calls(self) -> int:
        return sum(1 for call in read_calls(self.calls) if call["marker"])

    def listed(self) -> dict[str, dict[str, object]]:
        listing, seconds = self.run("index", "list", "--json")
        assert listing.returncode == 0, listing.stderr
        assert seconds < QUICK_SECONDS
        return {f["name"]: f for f in json.loads(listing.stdout)[0]["files"]}


def _serves(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _wait_until(
    condition: object, what: str, process: subprocess.Popen[bytes], limit: float
) -> None:
    deadline = time.monotonic() + limit
    while not condition():  # type: ignore[operator]
        assert process.poll() is None, f"ragloom serve ended before {what}"
        assert time.monotonic() < deadline, f"no {what} within {limit:.0f} s"
        time.sleep(0.1)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def ragloom(tmp_path: Path) -> Ragloom:
    """A data folder where indexing ``trap.md`` killed ``ragloom index add`` once."""
    app = Ragloom(tmp_path)
    (tmp_path / "pumps.md").write_text(GOOD, encoding="utf-8")
    (tmp_path / "trap.md").write_text(BAD, encoding="utf-8")
    # Two uploads: in one, the files' chunks would be embedded together, and the kill would
    # leave pumps.md to the recovery too (tests/app/index/file/test_groups.py).
    added, _ = app.run("index", "add", str(tmp_path / "pumps.md"))
    assert added.returncode == 0, added.stdout + added.stderr
    added, _ = app.run("index", "add", str(tmp_path / "trap.md"))
    assert added.returncode == -signal.SIGKILL, added.stdout + added.stderr
    assert app.marker_calls() == 1
    assert app.sources() == {"pumps.md": ("INDEXED", 1, None), "trap.md": ("INDEXING", 1, None)}
    return app


def test_commands_after_the_crash_return_at_once_and_index_nothing_again(
    ragloom: Ragloom,
) -> None:
    calls_before = len(read_calls(ragloom.calls))
    files = ragloom.listed()
    assert (files["trap.md"]["status"], files["trap.md"]["reason"]) == ("queued", WAITING)
    assert files["trap.md"]["attempts"] == 1 and files["pumps.md"]["status"] == "indexed"

    check, seconds = ragloom.run("index", "check", "--json")
    assert check.returncode == 1 and seconds < QUICK_SECONDS, check.stderr
    (report,) = json.loads(check.stdout)["indices"]
    assert [p["kind"] for p in report["problems"]] == ["interrupted"]
    for command in (("modes",), ("plugins",)):
        done, seconds = ragloom.run(*command)
        assert done.returncode == 0 and seconds < QUICK_SECONDS, done.stderr

    removed, seconds = ragloom.run("index", "remove", "trap.md")
    assert removed.returncode == 0 and seconds < QUICK_SECONDS, removed.stderr
    assert ragloom.sources() == {"pumps.md": ("INDEXED", 1, None)}
    clean, _ = ragloom.run("index", "check", "--json")
    assert clean.returncode == 0 and json.loads(clean.stdout)["ok"], clean.stdout
    # Not one of these commands embedded anything: none indexed the file again.
    assert len(read_calls(ragloom.calls)) == calls_before
    assert ragloom.marker_calls() == 1


def test_serve_retries_once_after_it_listens_then_fails_the_file_for_good(
    ragloom: Ragloom,
) -> None:
    # First restart: the server comes up, then the background retry kills it again.
    port = free_port()
    first = ragloom.serve(port)
    try:
        first.wait(timeout=240)
    finally:
        _stop(first)
    assert first.returncode == -signal.SIGKILL, ragloom.log_of(port)
    (retry,) = [call for call in read_calls(ragloom.calls) if call["marker"]][1:]
    assert retry["pid"] == first.pid
    assert retry["served"] == 200  # the page was being served while the retry ran
    assert ragloom.sources()["trap.md"] == ("INDEXING", 2, None)

    # Second restart: the file is failed with the reason, and the server stays up.
    port = free_port()
    second = ragloom.serve(port)
    try:
        _wait_until(lambda: _serves(port), "the page", second, 180)
        _wait_until(
            lambda: ragloom.sources()["trap.md"][0] == "FAILED", "the failed file", second, 120
        )
        # Said once the recovery has returned, just after the row was written.
        said = "recovery: trap.md failed: indexing stopped 2 times"
        _wait_until(lambda: said in ragloom.log_of(port), "the recovery's warning", second, 60)
        assert _serves(port) and second.poll() is None
    finally:
        _stop(second)
    assert ragloom.marker_calls() == 2
    assert ragloom.sources() == {
        "pumps.md": ("INDEXED", 1, None),
        "trap.md": ("FAILED", 2, GAVE_UP_REASON),
    }

    # Later starts leave it failed: listing, repair, never another attempt.
    files = ragloom.listed()
    assert (files["trap.md"]["status"], files["trap.md"]["reason"]) == ("failed", GAVE_UP_REASON)
    repaired, _ = ragloom.run("index", "check", "--repair", "--json")
    assert repaired.returncode == 0 and json.loads(repaired.stdout)["indices"][0]["clean"]
    assert ragloom.marker_calls() == 2
