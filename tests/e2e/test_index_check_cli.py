"""`ragloom index create` with settings and `ragloom index check [--repair]` as users run them."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

from ragloom_app.index.file.recovery import GAVE_UP_REASON
from tests.helpers.cli import cli_env, run_python, run_ragloom

MANUAL = (
    "# Pump manual\n\nThe harbour pumps move seawater uphill at night when power is cheap.\n\n"
    "Each pump has a bronze impeller that the crew replaces every winter.\n\n"
    "The oldest pump dates from 1931 and still runs on Sundays for visitors.\n"
)
# Run in a separate process as the app would be: lose a vector, add a stray BM25 chunk.
CORRUPT = """
from ragloom.schema import Chunk
from ragloom_app.app import BaseApp
from ragloom_app.settings import AppSettings

index = BaseApp(AppSettings.load()).start().indices.get("Manuals")
lost = sorted(index.vector_store.ids())[0]
index.vector_store.delete([lost])
index.fulltext_store.add([Chunk("ghost-00000", "A ghost chunk.", "ghost", "ghost.md")])
print(lost)
"""
# Die as a SIGKILL would (no clean-up), after the stores are written and before the flip
# to indexed: while indexing a file (`add PATH`), or while recovering it (`recover`).
INTERRUPT = """
import os, sys
from ragloom_app.app import BaseApp
from ragloom_app.index.file.pipeline import FileIndexingPipeline
from ragloom_app.settings import AppSettings

FileIndexingPipeline._flip = lambda *args: os._exit(9)
index = BaseApp(AppSettings.load()).start().indices.get("My files")
if sys.argv[1] == "add":
    index.get_indexing_pipeline({}).run([sys.argv[2]])
else:
    index.recover()
"""


def _run(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_python(*args, env=cli_env(data_dir), cwd=data_dir.parent)


def _ragloom(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_ragloom(*args, env=cli_env(data_dir), cwd=data_dir.parent)


def test_create_with_settings_then_check_and_repair(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    created = _ragloom(
        data_dir,
        *("index", "create", "Manuals", "--chunk-size", "24", "--chunk-overlap", "4"),
        *("--extensions", "md,.ZIP"),
    )
    assert created.returncode == 0, created.stderr
    assert created.stdout.startswith("created index 'Manuals': chunk_size=24, chunk_overlap=4")
    with sqlite3.connect(data_dir / "ragloom.db") as conn:
        (config,) = conn.execute("SELECT config FROM indices WHERE name = 'Manuals'").fetchone()
    assert json.loads(config) == {
        **json.loads(config),
        "chunk_size": 24,
        "chunk_overlap": 4,
        "extensions": [".md", ".zip"],
    }
    bad = _ragloom(data_dir, "index", "create", "Bad", "--chunk-overlap", "500")
    assert bad.returncode == 2
    assert "chunk overlap must be in [0, chunk size), got 500" in bad.stderr

    (tmp_path / "manual.md").write_text(MANUAL)
    (tmp_path / "notes.txt").write_text("Not taken by this index.")
    added = _ragloom(
        data_dir, "index", "add", str(tmp_path / "manual.md"), str(tmp_path / "notes.txt"),
        "--index", "Manuals", "--json",
    )  # fmt: skip
    outcomes = {f["file"]: f for f in json.loads(added.stdout)["files"]}
    assert outcomes["manual.md"]["status"] == "indexed" and outcomes["manual.md"]["chunks"] >= 3
    assert outcomes["notes.txt"]["reason"].startswith("unsupported file type '.txt'")

    corrupt = _run(data_dir, "-c", CORRUPT)
    assert corrupt.returncode == 0, corrupt.stderr
    lost = corrupt.stdout.strip()

    found = _ragloom(data_dir, "index", "check", "--index", "Manuals")
    assert found.returncode == 1, found.stdout + found.stderr
    assert "Manuals: 2 problems, problems remain" in found.stdout
    assert "missing_chunks [vector]: 1 chunks of indexed files are missing from Chroma" in (
        found.stdout
    )
    assert "extra_chunks [fulltext]: 1 chunks in the full-text store belong to no indexed file" in (
        found.stdout
    )
    assert "ragloom index check --repair" in found.stderr

    repaired = _ragloom(data_dir, "index", "check", "--repair", "--json")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    result = json.loads(repaired.stdout)
    assert result["ok"] is True
    reports = {r["index"]: r for r in result["indices"]}
    assert reports["My files"]["clean"]
    problems = {(p["kind"], p["store"]): p for p in reports["Manuals"]["problems"]}
    assert problems[("missing_chunks", "vector")]["ids"] == [lost]
    assert problems[("extra_chunks", "fulltext")]["ids"] == ["ghost-00000"]
    assert all(p["repaired"] for p in problems.values())
    # The repair checked again afterwards: those counts are of the repaired index.
    counts = reports["Manuals"]["counts"]
    assert (
        counts["chunks"]
        == counts["vector"]
        == counts["fulltext"]
        == outcomes["manual.md"]["chunks"]
    )


def test_repair_fails_a_file_that_stopped_twice_instead_of_indexing_it_again(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    manual = tmp_path / "manual.md"
    manual.write_text(MANUAL)
    assert _run(data_dir, "-c", INTERRUPT, "add", str(manual)).returncode == 9
    assert _run(data_dir, "-c", INTERRUPT, "recover").returncode == 9  # the retry dies too

    found = _ragloom(data_dir, "index", "check")
    assert found.returncode == 1, found.stdout + found.stderr
    assert (
        "interrupted: 1 files were left unfinished by a process that stopped: 'manual.md'; "
        "'manual.md' stopped 2 times and will be failed, not indexed again"
    ) in found.stdout
    repaired = _ragloom(data_dir, "index", "check", "--repair", "--json")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    (report,) = json.loads(repaired.stdout)["indices"]
    assert [(p["kind"], p["repaired"]) for p in report["problems"]] == [("interrupted", True)]
    assert report["counts"] == {**report["counts"], "chunks": 0, "vector": 0, "fulltext": 0}

    listing = _ragloom(data_dir, "index", "list", "--json")
    (source,) = json.loads(listing.stdout)[0]["files"]
    assert (source["status"], source["attempts"]) == ("failed", 2)
    assert source["reason"] == GAVE_UP_REASON
    # Adding the file again starts afresh.
    added = _ragloom(data_dir, "index", "add", str(manual), "--json")
    assert added.returncode == 0, added.stderr
    listing = _ragloom(data_dir, "index", "list", "--json")
    (source,) = json.loads(listing.stdout)[0]["files"]
    assert (source["status"], source["attempts"], source["reason"]) == ("indexed", 1, None)
