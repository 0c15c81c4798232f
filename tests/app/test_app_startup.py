"""BaseApp.start: folders and database at startup, registries, errors naming the setting."""

import os
from pathlib import Path

import pytest

from ragloom_app.app import BaseApp
from ragloom_app.plugins.manager import create_plugin_manager
from ragloom_app.settings import AppSettings, SettingsError

FILE_INDEX = "ragloom_app.index.file.FileIndex"


def _settings(tmp_path: Path, **changes: object) -> AppSettings:
    settings = AppSettings(data_dir=tmp_path / "data")
    for key, value in changes.items():
        setattr(settings, key, value)
    return settings


def test_nothing_is_created_before_start(tmp_path: Path) -> None:
    # No entry-point plugins: a plugin installed in the environment would add its modes.
    app = BaseApp(_settings(tmp_path), plugin_manager=create_plugin_manager())
    assert not (tmp_path / "data").exists()
    app.start()
    assert (tmp_path / "data" / "ragloom.db").is_file()
    assert list(app.reasonings) == ["fullqa", "decompose", "react", "rewoo", "auto"]
    assert [index.name for index in app.indices.indices] == ["My files"]


def test_indices_survive_a_restart(tmp_path: Path) -> None:
    BaseApp(_settings(tmp_path)).start().indices.create(
        "Papers", "ragloom_app.index.file.FileIndex"
    )
    again = BaseApp(_settings(tmp_path)).start()
    assert [index.name for index in again.indices.indices] == ["My files", "Papers"]


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        (
            "reasonings",
            ["ragloom_app.reasoning.nope.Missing"],
            r"REASONINGS\[0\]: cannot import 'ragloom_app.reasoning.nope.Missing'",
        ),
        (
            "reasonings",
            ["ragloom_app.reasoning.fullqa.Missing"],
            r"REASONINGS\[0\]: .*has no 'Missing'",
        ),
        (
            "reasonings",
            ["ragloom_app.settings.AppSettings"],
            r"REASONINGS\[0\]: .* is not a subclass of BaseReasoning",
        ),
        ("index_types", ["nowhere.Index"], r"INDEX_TYPES\[0\]: cannot import 'nowhere.Index'"),
        (
            "default_reasoning",
            "telepathy",
            r"DEFAULT_REASONING: 'telepathy' is not a registered mode",
        ),
        ("default_llm", "gpt-9", r"DEFAULT_LLM: 'gpt-9' is not in LLMS"),
        (
            "default_embedding",
            "e5-huge",
            r"DEFAULT_EMBEDDING: 'e5-huge' is not in EMBEDDINGS \(local",
        ),
        ("indices", [{"name": "X"}], r"INDICES\[0\]: needs 'name' and 'type'"),
        # Stored unchecked before: every upload to the index failed later.
        (
            "indices",
            [{"name": "Bad", "type": FILE_INDEX, "config": {"chunk_size": -3, "bogus": 1}}],
            r"INDICES\[0\] \('Bad'\): unknown index settings: bogus",
        ),
        (
            "indices",
            [{"name": "Bad", "type": FILE_INDEX, "config": {"chunk_overlap": "abc"}}],
            r"INDICES\[0\] \('Bad'\): chunk size and overlap must be whole numbers",
        ),
        (
            "indices",
            [{"name": "Bad", "type": FILE_INDEX, "config": {"chunk_size": -3}}],
            r"INDICES\[0\] \('Bad'\): chunk size must be at least 16 tokens, got -3",
        ),
        (
            "indices",
            [{"name": "Bad", "type": FILE_INDEX, "config": ["chunk_size"]}],
            r"INDICES\[0\] \('Bad'\): 'config' must be a dict",
        ),
        # SQLAlchemy's errors, with a traceback, before.
        (
            "database_url",
            "bogus://user:secret@db/ragloom",
            r"^DATABASE_URL: no database driver of this installation takes 'bogus' URLs "
            r"\(PostgreSQL: postgresql\+psycopg://USER@HOST/NAME; SQLite: sqlite:///PATH\)$",
        ),
        (
            "database_url",
            "a database over there",
            r"^DATABASE_URL: not a database URL \(PostgreSQL: postgresql\+psycopg://",
        ),
    ],
)
def test_bad_settings_stop_startup_naming_the_setting(
    tmp_path: Path, setting: str, value: object, message: str
) -> None:
    with pytest.raises(SettingsError, match=message):
        BaseApp(_settings(tmp_path, **{setting: value})).start()


def test_the_data_folder_is_created_owner_only(tmp_path: Path) -> None:
    import stat

    app = BaseApp(_settings(tmp_path), plugin_manager=create_plugin_manager()).start()
    data = tmp_path / "data"
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert stat.S_IMODE((data / "ragloom.db").stat().st_mode) == 0o600
    assert os.umask(0o077) & 0o077 == 0o077  # what the process creates later stays private
    assert app.started


def test_the_index_reads_the_file_size_limit_from_the_settings(tmp_path: Path) -> None:
    app = BaseApp(_settings(tmp_path, max_file_bytes=1234)).start()
    assert app.indices.indices[0].resources.max_file_bytes == 1234
