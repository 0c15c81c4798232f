"""``ragloom jobs``, ``ragloom worker`` and ``ragloom index export|import`` as an operator
runs them: jobs listed, shown and cancelled; clear errors for an unknown job and for a
worker without the queue it runs; an index exported and imported under a new name; an
import stopped by SIGTERM or SIGHUP leaves no index behind."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from ragloom_app import cli
from ragloom_app.app import BaseApp
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.transfer import embedding_identity, export_index
from ragloom_app.jobs.store import JobStore
from ragloom_app.settings import AppSettings
from tests.helpers.cli import cli_env, run_python

SETTINGS = """
EMBEDDINGS = {"hash": {"class": "ragloom_app.testing.HashEmbeddings"}}
DEFAULT_EMBEDDING = "hash"
FIRST_RUN_DOCS = None
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    settings = tmp_path / "flowsettings.py"
    settings.write_text(SETTINGS, encoding="utf-8")
    return cli_env(tmp_path / "data", settings)


def _ragloom(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragloom_app.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _app(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> BaseApp:
    monkeypatch.setenv("RAGLOOM_DATA_DIR", env["RAGLOOM_DATA_DIR"])
    return BaseApp(AppSettings.load(env["RAGLOOM_SETTINGS"])).start()


def test_jobs_are_listed_shown_and_cancelled(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = _app(env, monkeypatch)
    index = app.indices.get("My files")
    job = JobStore(app.engine).create(
        index_id=index.id, owner="alice", kind="add", files=[{"name": "a.md", "path": "0"}]
    )
    waiting = _ragloom(env, "jobs", "show", job.id)
    assert waiting.stdout.splitlines()[1] == "  waiting its turn: 0 jobs ahead"
    listed = _ragloom(env, "jobs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (shown,) = json.loads(listed.stdout)
    assert (shown["id"], shown["status"], shown["owner"], shown["files"]) == (
        job.id,
        "queued",
        "alice",
        ["a.md"],
    )
    cancelled = _ragloom(env, "jobs", "cancel", job.id)
    assert cancelled.returncode == 0 and cancelled.stdout.strip() == f"{job.id}: cancelled"
    detail = _ragloom(env, "jobs", "show", job.id)
    assert detail.returncode == 0 and "cancelled" in detail.stdout.splitlines()[0]
    assert _ragloom(env, "jobs", "list", "--active").stdout.strip() == "no jobs"
    unknown = _ragloom(env, "jobs", "show", "nope")
    # Told as written: a KeyError's str() is its repr, which quoted it again.
    assert (unknown.returncode, unknown.stderr) == (2, "ragloom: error: no job 'nope'\n")


def test_a_worker_needs_the_procrastinate_queue(env: dict[str, str]) -> None:
    refused = _ragloom(env, "worker")
    assert refused.returncode == 2
    assert "JOB_QUEUE" in refused.stderr and "procrastinate" in refused.stderr


def test_a_worker_needs_the_queue_in_a_postgresql_database(env: dict[str, str]) -> None:
    """On SQLite the queue's first statement (PostgreSQL's) failed: a traceback."""
    refused = _ragloom({**env, "RAGLOOM_JOB_QUEUE": "procrastinate"}, "worker")
    assert refused.returncode == 2
    assert refused.stderr == (
        "ragloom: error: JOB_QUEUE = 'procrastinate' keeps its jobs in the app database, "
        "which must then be PostgreSQL (DATABASE_URL), not sqlite\n"
    )


def test_an_index_is_exported_and_imported_under_a_new_name(
    env: dict[str, str], tmp_path: Path
) -> None:
    document = tmp_path / "reactor.md"
    document.write_text("The Zorblax reactor runs at 451 kelvin.", encoding="utf-8")
    assert _ragloom(env, "index", "add", str(document)).returncode == 0
    exported = tmp_path / "my-files.zip"
    run = _ragloom(env, "index", "export", "My files", str(exported))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "exported 'My files': 1 files, 1 chunks"
    again = _ragloom(env, "index", "export", "My files", str(exported))
    assert again.returncode == 2 and "exists: name another file, or --force" in again.stderr
    run = _ragloom(env, "index", "export", "My files", str(exported), "--force")
    assert run.returncode == 0, run.stderr
    run = _ragloom(env, "index", "import", str(exported), "--name", "Copy")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "imported 'Copy' (shared): 1 files, 1 chunks"
    again = _ragloom(env, "index", "import", str(exported))  # "My files" exists
    assert again.returncode == 2 and again.stderr.startswith("ragloom: error:")
    listing = json.loads(_ragloom(env, "index", "list", "--json").stdout)
    assert sorted(i["name"] for i in listing) == ["Copy", "My files"]


def test_an_index_is_imported_for_the_owner_and_with_the_visibility_asked(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = _app(env, monkeypatch)
    alice = app.accounts.add_user("alice", "correct horse battery")
    exported = tmp_path / "my-files.zip"
    assert _ragloom(env, "index", "export", "My files", str(exported)).returncode == 0
    run = _ragloom(env, "index", "import", str(exported), "--name", "A", "--owner", "alice")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "imported 'A' (shared): 0 files, 0 chunks"  # as exported
    run = _ragloom(env, "index", "import", str(exported), "--name", "B", "--private")
    assert run.stdout.strip() == "imported 'B' (private to the local user): 0 files, 0 chunks"
    app = _app(env, monkeypatch)
    access = {i.name: app.indices.access(i) for i in app.indices.indices}
    assert (access["A"].owner, access["A"].shared) == (str(alice.id), True)
    assert (access["B"].owner, access["B"].shared) == ("local", False)
    unknown = _ragloom(env, "index", "import", str(exported), "--name", "C", "--owner", "eve")
    assert unknown.returncode == 2 and "no user named 'eve'" in unknown.stderr


# `ragloom index import` with the signal sent to itself once the first file is in.
STOPPED_IMPORT = """
import os, signal, sys
from ragloom_app import cli
from ragloom_app.index.file.transfer import importer

copy = importer._copy_checked

def stopped_midway(*args):
    copy(*args)
    os.kill(os.getpid(), signal.{name})

importer._copy_checked = stopped_midway
sys.exit(cli.main(sys.argv[1:]))
"""


def _exported(env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An export of "My files" holding two files."""
    app = _app(env, monkeypatch)
    index = app.indices.get("My files")
    assert isinstance(index, FileIndex)
    for name in ("a.md", "b.md"):
        (tmp_path / name).write_text(f"# {name}\n\nThe file {name}.", encoding="utf-8")
    index.get_indexing_pipeline({}).run([tmp_path / "a.md", tmp_path / "b.md"])
    spec = app.settings.embeddings[app.settings.default_embedding]
    identity = embedding_identity(spec, app.embeddings().dimension)
    export_index(index, tmp_path / "export.zip", identity)
    return tmp_path / "export.zip"


def _stopped_import(env: dict[str, str], exported: Path, stop: signal.Signals) -> Any:
    """``ragloom index import`` of ``exported`` as "Copy", sent ``stop`` after one file."""
    script = STOPPED_IMPORT.format(name=stop.name)
    return run_python("-c", script, "index", "import", str(exported), "--name", "Copy", env=env)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_an_import_stopped_by_a_signal_deletes_the_index_it_had_begun(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: signal.Signals
) -> None:
    """`docker stop` (SIGTERM), a closed ssh session (SIGHUP): the import's clean-up runs,
    as for Ctrl-C, instead of the process ending with half an index that is listed,
    searched and checks clean."""
    run = _stopped_import(env, _exported(env, tmp_path, monkeypatch), stop)
    assert run.returncode == 128 + stop, run.stderr
    assert f"the import was stopped ({stop.name}): the index it had begun is deleted" in run.stderr
    listing = json.loads(_ragloom(env, "index", "list", "--json").stdout)
    assert [i["name"] for i in listing] == ["My files"]


# The signal sent while the index is being made, and while a failed import cleans up.
STOPPED_WHILE_MADE = """
import os, signal, sys
from ragloom_app import cli
from ragloom_app.index.manager import IndexManager

create = IndexManager.create

def create_then_stop(self, *args, **kwargs):
    index = create(self, *args, **kwargs)
    os.kill(os.getpid(), signal.{name})
    return index

IndexManager.create = create_then_stop
sys.exit(cli.main(sys.argv[1:]))
"""
STOPPED_IN_CLEAN_UP = """
import os, signal, sys
from ragloom_app import cli
from ragloom_app.index.manager import IndexManager
from ragloom_app.index.file.transfer import importer
from ragloom_app.index.file.transfer.format import IndexTransferError

copy, delete = importer._copy_checked, IndexManager.delete

def damaged(*args):
    copy(*args)
    raise IndexTransferError("the export is damaged")

def stop_then_delete(self, *args, **kwargs):
    os.kill(os.getpid(), signal.{name})
    return delete(self, *args, **kwargs)

importer._copy_checked, IndexManager.delete = damaged, stop_then_delete
sys.exit(cli.main(sys.argv[1:]))
"""
# Ctrl-C once the first file is in, and again while the import deletes what it made.
CTRL_C_TWICE = """
import os, signal, sys
from ragloom_app import cli
from ragloom_app.index.manager import IndexManager
from ragloom_app.index.file.transfer import importer

copy, delete = importer._copy_checked, IndexManager.delete

def stopped_midway(*args):
    copy(*args)
    os.kill(os.getpid(), signal.SIGINT)

def stop_again_then_delete(self, *args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)
    return delete(self, *args, **kwargs)

importer._copy_checked, IndexManager.delete = stopped_midway, stop_again_then_delete
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    ("script", "stop"),
    [
        (STOPPED_WHILE_MADE, signal.SIGTERM),
        (STOPPED_IN_CLEAN_UP, signal.SIGTERM),
        (STOPPED_WHILE_MADE, signal.SIGINT),
        (STOPPED_IN_CLEAN_UP, signal.SIGINT),
        (CTRL_C_TWICE, signal.SIGINT),
    ],
    ids=["making", "cleaning-up", "making-ctrl-c", "cleaning-up-ctrl-c", "ctrl-c-twice"],
)
def test_a_stop_while_the_index_is_made_or_cleaned_up_waits_for_that_step(
    env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    script: str,
    stop: signal.Signals,
) -> None:
    """Raised wherever it came, a stop once left the index made but neither marked nor
    deleted, or cut its deletion in two, while the import said it was deleted. Ctrl-C
    too: it waited for neither step (a second one left half an index)."""
    exported = _exported(env, tmp_path, monkeypatch)
    script = script.replace("{name}", stop.name)
    run = run_python("-c", script, "index", "import", str(exported), "--name", "Copy", env=env)
    if stop == signal.SIGINT:  # KeyboardInterrupt, as ever: click's "Aborted!", status 1
        assert (run.returncode, run.stderr.strip().splitlines()[-1]) == (1, "Aborted!")
    else:
        assert run.returncode == 128 + stop, run.stderr
        assert "the index it had begun is deleted" in run.stderr
    listing = json.loads(_ragloom(env, "index", "list", "--json").stdout)
    assert [i["name"] for i in listing] == ["My files"]


# `ragloom index export` with the signal sent to itself once the first file's chunks are out.
STOPPED_EXPORT = """
import os, signal, sys
from ragloom_app import cli
from ragloom_app.index.file.transfer import export

export_source = export._export_source

def stopped_midway(*args):
    written = export_source(*args)
    os.kill(os.getpid(), signal.{name})
    return written

export._export_source = stopped_midway
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_an_export_stopped_by_a_signal_leaves_nothing_behind(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: signal.Signals
) -> None:
    """Ended at once, it left its work folder (every chunk's text) beside the target."""
    _exported(env, tmp_path, monkeypatch)  # "My files" holds two files
    out = tmp_path / "out"
    out.mkdir()
    script = STOPPED_EXPORT.format(name=stop.name)
    run = run_python("-c", script, "index", "export", "My files", str(out / "x.zip"), env=env)
    assert run.returncode == 128 + stop, run.stderr
    assert f"the export was stopped ({stop.name}): no file was written" in run.stderr
    assert list(out.iterdir()) == []


# `ragloom index export` with SIGTERM sent to itself once the export is in place, as its
# work folder is removed.
STOPPED_AFTER_EXPORT = """
import os, signal, sys
from ragloom_app import cli
from ragloom_app.index.file.transfer import export

remove = export.shutil.rmtree

def stopped_at_the_end(path, **options):
    os.kill(os.getpid(), signal.SIGTERM)
    return remove(path, **options)

export.shutil.rmtree = stopped_at_the_end
sys.exit(cli.main(sys.argv[1:]))
"""


def test_an_export_stopped_once_it_was_written_says_so(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It said "no file was written" of the whole export it had put in place."""
    _exported(env, tmp_path, monkeypatch)
    target = tmp_path / "out" / "x.zip"
    target.parent.mkdir()
    run = run_python(
        "-c", STOPPED_AFTER_EXPORT, "index", "export", "My files", str(target), env=env
    )
    assert run.returncode == 128 + signal.SIGTERM, run.stderr
    assert f"the export was stopped (SIGTERM): {str(target)!r} was written whole" in run.stderr
    assert [p.name for p in target.parent.iterdir()] == ["x.zip"]
    assert zipfile.is_zipfile(target)


def test_the_stop_signals_raise_only_while_an_import_runs_and_nohup_is_kept() -> None:
    """The handlers are given back after; a SIGHUP ignored (``nohup ragloom index import``)
    stays ignored, so a closed session does not stop an import meant to survive it."""
    from ragloom_app.stop_signals import StopRequested, stop_signals_raise

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(StopRequested, match="SIGTERM"), stop_signals_raise():
        signal.raise_signal(signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is before
    ignored = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with stop_signals_raise():
            signal.raise_signal(signal.SIGHUP)  # ignored: nothing raised
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, ignored)


def test_an_index_an_import_killed_outright_left_is_reported_and_repair_deletes_it(
    env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """SIGKILL (or power lost): nothing can clean up, but the import's mark outlives it."""
    run = _stopped_import(env, _exported(env, tmp_path, monkeypatch), signal.SIGKILL)
    assert run.returncode == -signal.SIGKILL
    monkeypatch.setenv("RAGLOOM_SETTINGS", env["RAGLOOM_SETTINGS"])
    assert cli.main(["index", "list"]) == 0
    assert (
        "Copy (FileIndex, 1 files; its import was killed: `ragloom index check --repair` "
        "deletes it)" in capsys.readouterr().out
    )
    assert cli.main(["index", "list", "--json"]) == 0
    listed = {i["name"]: i["import"] for i in json.loads(capsys.readouterr().out)}
    assert listed == {"My files": None, "Copy": "interrupted"}
    assert cli.main(["index", "check", "--index", "Copy"]) == 1
    assert "interrupted_import: an import into it stopped before every file was in" in (
        capsys.readouterr().out
    )
    assert cli.main(["index", "check", "--repair"]) == 0
    shown = capsys.readouterr().out
    assert "Copy: 1 problems, all repaired" in shown and "My files: clean" in shown
    assert cli.main(["index", "list", "--json"]) == 0
    assert [i["name"] for i in json.loads(capsys.readouterr().out)] == ["My files"]


def test_an_index_being_imported_is_said_to_be_and_is_not_taken_for_a_killed_one(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragloom_app.index.file.transfer import import_index, importer

    exported = _exported(env, tmp_path, monkeypatch)
    app = _app(env, monkeypatch)
    seen: list[object] = []
    import_source = importer._import_source

    def looked_at_meanwhile(pipeline: Any, *args: Any) -> int:
        index = app.indices.get("Copy")
        assert isinstance(index, FileIndex)
        seen.extend([index.import_state(), index.check().notes])
        return import_source(pipeline, *args)

    monkeypatch.setattr(importer, "_import_source", looked_at_meanwhile)
    spec = app.settings.embeddings[app.settings.default_embedding]
    identity = embedding_identity(spec, app.embeddings().dimension)
    index, _ = import_index(
        app.indices, exported, identity, type_id=app.settings.index_types[0], name="Copy"
    )
    assert seen[:2] == ["under way", ["an import is filling it right now"]]
    assert index.import_state() is None and index.check().clean
