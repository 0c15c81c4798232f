"""``ragloom index ...`` run in this process as a user types it: an error a user can fix
is told in words with exit status 2, never a traceback; a deletion is asked first."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ragloom_app import cli

SETTINGS = """
EMBEDDINGS = {"hash": {"class": "ragloom_app.testing.HashEmbeddings"}}
DEFAULT_EMBEDDING = "hash"
FIRST_RUN_DOCS = None
"""


@pytest.fixture
def no_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A deployment whose settings make no index (``INDICES = []``); its data folder."""
    settings = tmp_path / "flowsettings.py"
    settings.write_text(SETTINGS + "INDICES = []\n", encoding="utf-8")
    monkeypatch.setenv("RAGLOOM_SETTINGS", str(settings))
    monkeypatch.setenv("RAGLOOM_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


class _Terminal(io.StringIO):
    """Standard input typed at a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def deployment(no_index: Path, tmp_path: Path) -> Path:
    """A deployment with one index, "Notes", holding one file (``INDICES`` would make
    theirs again at the next start)."""
    (tmp_path / "notes.md").write_text("# Notes\n\nThe pumps run at night.", encoding="utf-8")
    assert cli.main(["index", "create", "Notes"]) == 0
    assert cli.main(["index", "add", str(tmp_path / "notes.md")]) == 0
    return tmp_path


def _indices(capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    assert cli.main(["index", "list"]) == 0
    return [line.split(" (")[0] for line in capsys.readouterr().out.splitlines() if line[:1] != " "]


def test_deleting_an_index_asks_first_and_says_what_it_deleted(
    deployment: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", _Terminal("n\n"))
    capsys.readouterr()
    assert cli.main(["index", "delete", "Notes"]) == 1
    out = capsys.readouterr()
    assert out.out.startswith("Delete the index 'Notes' and its 1 files? [y/N]")
    assert "Aborted!" in out.err
    assert _indices(capsys) == ["Notes"]
    monkeypatch.setattr("sys.stdin", _Terminal("y\n"))
    assert cli.main(["index", "delete", "Notes"]) == 0
    assert capsys.readouterr().out.endswith("deleted the index 'Notes' and its 1 files\n")
    assert _indices(capsys) == []


def test_a_script_deletes_an_index_only_with_yes(
    deployment: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))  # a pipe: nobody to ask
    capsys.readouterr()
    assert cli.main(["index", "delete", "Notes"]) == 2
    assert capsys.readouterr().err.strip() == (
        "ragloom: error: standard input is not a terminal to ask on: pass --yes to delete "
        "the index 'Notes' and its 1 files"
    )
    assert _indices(capsys) == ["Notes"]
    assert cli.main(["index", "delete", "Notes", "--yes"]) == 0
    assert capsys.readouterr().out == "deleted the index 'Notes' and its 1 files\n"
    assert _indices(capsys) == []


@pytest.mark.parametrize("command", [["add", "notes.md"], ["remove", "notes.md"]])
def test_adding_or_removing_files_with_no_index_says_to_create_one(
    no_index: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["index", *command]) == 2
    assert capsys.readouterr().err.strip() == (
        "ragloom: error: no index: create one with `ragloom index create NAME`"
    )


def test_a_folder_is_added_without_following_its_symbolic_links(
    deployment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A downloaded folder's ``notes.txt -> ~/.ssh/...`` would put the key into an index
    others read: no link inside a folder is followed (wherever it points), and each is
    said to have failed, with why."""
    outside = deployment / "outside"
    outside.mkdir()
    (outside / "id_ed25519.txt").write_text("PRIVATE KEY 7741", encoding="utf-8")
    folder = deployment / "downloaded"
    (folder / "sub").mkdir(parents=True)
    (folder / "readme.md").write_text("# Readme\n\nThe valves close at dawn.", encoding="utf-8")
    (folder / "notes.txt").symlink_to(outside / "id_ed25519.txt")
    (folder / "sub" / "again.md").symlink_to(folder / "readme.md")
    (folder / "keys").symlink_to(outside, target_is_directory=True)
    capsys.readouterr()
    assert cli.main(["index", "add", str(folder), "--index", "Notes", "--json"]) == 1
    files = {f["file"]: f for f in json.loads(capsys.readouterr().out)["files"]}
    links = [str(folder / name) for name in ("keys", "notes.txt", "sub/again.md")]
    assert sorted(files) == sorted([*links, "readme.md"])
    assert files["readme.md"]["status"] == "indexed"
    for link in links:
        assert files[link]["status"] == "failed"
        assert files[link]["reason"].startswith("a symbolic link, not followed inside a folder")
    assert cli.main(["index", "list", "--json"]) == 0
    (notes,) = json.loads(capsys.readouterr().out)
    assert sorted(f["name"] for f in notes["files"]) == ["notes.md", "readme.md"]


def test_an_index_is_not_deleted_while_an_import_fills_it_but_is_once_the_import_died(
    deployment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Deleted under a running import, the import died with a traceback; one whose import
    was killed is half an index, which deleting cleans up."""
    from ragloom_app.app import BaseApp
    from ragloom_app.index.file import FileIndex
    from ragloom_app.index.file.recovery import IMPORT_LOCK
    from ragloom_app.index.file.worklock import WorkLock
    from ragloom_app.settings import AppSettings

    index = BaseApp(AppSettings.load()).start().indices.get("Notes")
    assert isinstance(index, FileIndex)
    mark = WorkLock(index.locks_dir, IMPORT_LOCK)
    mark.acquire_new()  # as an import holds it while it fills the index
    try:
        capsys.readouterr()
        assert cli.main(["index", "delete", "Notes", "--yes"]) == 2
        assert capsys.readouterr().err.strip() == (
            "ragloom: error: 'Notes' cannot be deleted now: an import is still filling it: "
            "stop it (Ctrl-C deletes what it made) or let it end"
        )
        assert _indices(capsys) == ["Notes"]
    finally:
        mark.release(keep_file=True)  # as an import killed outright leaves it
    assert cli.main(["index", "delete", "Notes", "--yes"]) == 0
    assert _indices(capsys) == []


def test_an_index_is_not_deleted_while_files_are_being_indexed_into_it(
    deployment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the UI and the API refuse it: a job of a server's queue would fail on it."""
    from ragloom_app.app import BaseApp
    from ragloom_app.db.models import LOCAL_USER
    from ragloom_app.settings import AppSettings

    app = BaseApp(AppSettings.load()).start()
    notes = app.indices.get("Notes")
    job = app.jobs.store.create(index_id=notes.id, owner=LOCAL_USER, kind="add", files=[])
    capsys.readouterr()
    assert cli.main(["index", "delete", "Notes", "--yes"]) == 2
    assert capsys.readouterr().err.strip() == (
        "ragloom: error: 'Notes' cannot be deleted now: files are being indexed into it: "
        "cancel the jobs or wait"
    )
    app.jobs.cancel(job.id, LOCAL_USER)
    assert cli.main(["index", "delete", "Notes", "--yes"]) == 0
    assert _indices(capsys) == []
