"""``ragloom index ...`` run in this process as a user types it: an error a user can fix
is told in words with exit status 2, never a traceback."""

from __future__ import annotations

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


@pytest.mark.parametrize("command", [["add", "notes.md"], ["remove", "notes.md"]])
def test_adding_or_removing_files_with_no_index_says_to_create_one(
    no_index: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["index", *command]) == 2
    assert capsys.readouterr().err.strip() == (
        "ragloom: error: no index: create one with `ragloom index create NAME`"
    )
