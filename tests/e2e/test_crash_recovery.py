"""SIGKILL in the middle of indexing, then a restart: no half-indexed file, check clean.

A real ``ragloom index add`` process is killed while the database shows its big file in
status ``indexing`` (it is reading it then, or embedding it, which takes seconds). The
small file before it waits for the big one, to be embedded with it (the chunks of a few
files go to the model together), so it is interrupted too. The next ``ragloom`` command
only lists the files as interrupted (a start indexes nothing again); ``ragloom index
check --repair`` indexes them again from their stored copies, as ``ragloom serve`` would
in the background (tests/security/test_crash_loop.py).
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.cli import cli_env, run_ragloom

# fmt: off
WORDS = [
    "reactor", "pump", "valve", "turbine", "coolant", "loop", "pressure", "sensor", "alarm",
    "shift", "operator", "manual", "inspection", "flange", "gasket", "bearing", "motor",
    "relay", "breaker", "transformer", "cable", "conduit", "panel", "schedule", "report",
    "audit", "failure", "repair", "budget", "winter", "summer", "north", "harbour", "bridge",
]
# fmt: on


def _text(seed: int, paragraphs: int) -> str:
    """Deterministic prose-like text: about 60 words per paragraph."""
    rng = random.Random(seed)
    out = [f"# Maintenance log {seed}\n"]
    for number in range(paragraphs):
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 14))).capitalize() + "."
            for _ in range(5)
        ]
        out.append(f"Entry {number}. " + " ".join(sentences))
    return "\n\n".join(out) + "\n"


def _ragloom(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_ragloom(*args, env=cli_env(data_dir), cwd=data_dir.parent)


def _statuses(db: Path) -> dict[str, str]:
    """Source name -> status, read straight from the SQLite file the process writes."""
    if not db.exists():
        return {}
    try:
        with sqlite3.connect(db, timeout=1) as conn:
            return dict(conn.execute("SELECT name, status FROM sources"))
    except sqlite3.OperationalError:  # the tables are not created yet
        return {}


def _files(data_dir: Path) -> dict[str, dict[str, object]]:
    """``ragloom index list --json``: the first index's files by name."""
    listing = _ragloom(data_dir, "index", "list", "--json")
    assert listing.returncode == 0, listing.stderr
    return {f["name"]: f for f in json.loads(listing.stdout)[0]["files"]}


def test_sigkill_while_indexing_then_restart(tmp_path: Path) -> None:
    upload = tmp_path / "upload"
    upload.mkdir()
    (upload / "a-small.md").write_text(_text(1, 3), encoding="utf-8")
    # ~75 chunks of 200 tokens: seconds of embedding (2 to 10 on 2 cores), the window the
    # kill aims at, while the test's poll runs every 20 ms.
    (upload / "b-big.txt").write_text(_text(2, 200), encoding="utf-8")
    (upload / "c-after.md").write_text(_text(3, 3), encoding="utf-8")
    data_dir = tmp_path / "data"
    db = data_dir / "ragloom.db"
    files = [str(upload / name) for name in ("a-small.md", "b-big.txt", "c-after.md")]
    process = subprocess.Popen(
        [sys.executable, "-m", "ragloom_app.cli", "index", "add", *files, "--json"],
        env=cli_env(data_dir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 300
        while _statuses(db).get("b-big.txt") != "INDEXING":
            assert process.poll() is None, (
                f"indexing ended before it could be killed: {process.stderr.read().decode()!r}"
            )
            assert time.monotonic() < deadline, "b-big.txt never reached status indexing"
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stderr is not None
        process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    left = _statuses(db)
    assert left["a-small.md"] == left["b-big.txt"] == "INDEXING"
    # c-after.md is read while the group of the first two embeds: begun, or not yet.
    assert set(left) - {"a-small.md", "b-big.txt"} <= {"c-after.md"}
    assert set(left.values()) == {"INDEXING"}

    # The restart: a command starts the app, which indexes nothing again at start.
    waiting = _files(data_dir)
    assert set(waiting) == set(left)
    assert set(_statuses(db).values()) == {"INDEXING"}
    for name in left:
        assert (waiting[name]["status"], waiting[name]["attempts"]) == ("queued", 1)
        assert waiting[name]["reason"].startswith("interrupted; indexed again when")
    found = _ragloom(data_dir, "index", "check")
    assert found.returncode == 1
    assert f"interrupted: {len(left)} files were left unfinished" in found.stdout
    repaired = _ragloom(data_dir, "index", "check", "--repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr

    files_by_name = _files(data_dir)
    assert all(f["status"] in {"indexed", "failed"} for f in files_by_name.values())
    big = files_by_name["b-big.txt"]
    assert big["attempts"] == 2
    stored = data_dir / "indices" / "1" / "files"
    if any(stored.glob("*.txt")):  # the copy was complete: it is indexed again from it
        assert big["status"] == "indexed" and big["chunks"] > 50, big
    else:  # killed while copying (a few microseconds): failed, with the reason
        assert big == {**big, "status": "failed"}
        assert big["reason"] == "interrupted while indexing; add the file again"

    check = _ragloom(data_dir, "index", "check", "--json")
    assert check.returncode == 0, check.stdout + check.stderr
    (report,) = json.loads(check.stdout)["indices"]
    assert report["clean"], report["problems"]
    indexed_chunks = sum(f["chunks"] for f in files_by_name.values() if f["status"] == "indexed")
    assert report["counts"]["chunks"] == indexed_chunks
    assert report["counts"]["vector"] == report["counts"]["fulltext"] == indexed_chunks
    leftovers = [p for p in (data_dir / "indices" / "1").rglob("*") if ".partial" in p.name]
    assert leftovers == [] and not list((data_dir / "indices" / "1" / "locks").glob("*"))
