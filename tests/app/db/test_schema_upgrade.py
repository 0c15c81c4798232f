"""A database made before ``sources.attempts`` existed opens, gains the column, and works."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import SQLModel

from ragloom_app.app import BaseApp
from ragloom_app.db import engine as db_engine
from ragloom_app.db.engine import SchemaUpgradeError, add_missing_columns, create_db_engine
from ragloom_app.index.file import FileIndex
from ragloom_app.index.file.pipeline import INTERRUPTED_REASON
from ragloom_app.settings import AppSettings

# The tables as the release before attempt counting created them (SQLite's own dump).
OLD_SCHEMA = """
CREATE TABLE indices (
    id INTEGER NOT NULL, name VARCHAR NOT NULL, index_type VARCHAR NOT NULL, config JSON,
    created_at DATETIME NOT NULL, PRIMARY KEY (id)
);
CREATE UNIQUE INDEX ix_indices_name ON indices (name);
CREATE TABLE sources (
    id VARCHAR NOT NULL, index_id INTEGER NOT NULL, name VARCHAR NOT NULL,
    sha256 VARCHAR NOT NULL, size INTEGER NOT NULL, owner VARCHAR NOT NULL,
    status VARCHAR(8) NOT NULL, reason VARCHAR, chunk_count INTEGER NOT NULL,
    stored_path VARCHAR, created_at DATETIME NOT NULL, updated_at DATETIME NOT NULL,
    PRIMARY KEY (id), FOREIGN KEY(index_id) REFERENCES indices (id)
);
CREATE INDEX ix_sources_index_id ON sources (index_id);
CREATE INDEX ix_sources_sha256 ON sources (sha256);
INSERT INTO indices VALUES (1, 'My files', 'ragloom_app.index.file.FileIndex', '{}',
    '2025-01-01 10:00:00');
INSERT INTO sources VALUES ('s-failed', 1, 'scan.pdf', 'aa', 10, 'local', 'FAILED',
    'no text layer', 0, NULL, '2025-01-01 10:00:01', '2025-01-01 10:00:01');
INSERT INTO sources VALUES ('s-cut', 1, 'cut.md', 'bb', 10, 'local', 'INDEXING',
    NULL, 0, NULL, '2025-01-01 10:00:02', '2025-01-01 10:00:02');
"""


def _old_database(data_dir: Path) -> Path:
    data_dir.mkdir(parents=True)
    db = data_dir / "ragloom.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(OLD_SCHEMA)
    return db


def _columns(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[1] for row in conn.execute("PRAGMA table_info(sources)")]


def test_an_old_database_gains_the_column_and_works(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    db = _old_database(data_dir)
    assert "attempts" not in _columns(db)

    app = BaseApp(AppSettings(data_dir=data_dir)).start()
    assert _columns(db)[-1] == "attempts"
    with sqlite3.connect(db) as conn:
        assert dict(conn.execute("SELECT id, attempts FROM sources")) == {
            "s-failed": 0,
            "s-cut": 0,
        }
    (index,) = app.indices.indices
    assert isinstance(index, FileIndex)
    assert index.collection_name == "ragloom_index_1"  # where its vectors were put
    listed = {s["name"]: s for s in index.list_sources()}
    assert (listed["scan.pdf"]["status"], listed["scan.pdf"]["reason"]) == (
        "failed",
        "no text layer",
    )
    assert listed["cut.md"]["status"] == "queued"
    assert listed["cut.md"]["reason"].startswith("interrupted; indexed again")
    # Indexing and recovery run on the upgraded table.
    (tmp_path / "notes.md").write_text("# Notes\n\nThe harbour pumps run at night.\n")
    (outcome,) = index.get_indexing_pipeline({}).run([tmp_path / "notes.md"])
    assert outcome.status == "indexed"
    (recovered,) = index.recover()
    assert (recovered.name, recovered.reason) == ("cut.md", INTERRUPTED_REASON)
    attempts = {s["name"]: s["attempts"] for s in index.list_sources()}
    assert attempts == {"scan.pdf": 0, "cut.md": 1, "notes.md": 1}
    assert index.check().clean
    # A second start has nothing left to add.
    assert add_missing_columns(create_db_engine(f"sqlite:///{db}")) == []


def test_a_column_another_process_added_meanwhile_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _old_database(tmp_path / "data")
    engine = create_db_engine(f"sqlite:///{db}")  # adds the column, as the other process
    real = db_engine._columns_of
    looks = iter([False])

    def stale_first_look(bound: object, table: str) -> set[str]:
        # The first look predates the other process's ALTER; later ones see it.
        columns = real(engine, table)
        return (
            columns - {"attempts"} if table == "sources" and next(looks, True) is False else columns
        )

    monkeypatch.setattr(db_engine, "_columns_of", stale_first_look)
    assert add_missing_columns(engine) == []
    assert _columns(db).count("attempts") == 1


def test_the_statement_is_plain_sql_for_sqlite_and_postgres() -> None:
    sources = SQLModel.metadata.tables["sources"]
    for dialect in (sqlite.dialect(), postgresql.dialect()):
        statement = db_engine._column_sql(sources, sources.c.attempts, dialect)
        assert statement == "attempts INTEGER DEFAULT 0 NOT NULL"
    assert db_engine._column_sql(sources, sources.c.reason, postgresql.dialect()) == (
        "reason VARCHAR"
    )


def test_a_required_column_without_a_constant_default_needs_a_migration() -> None:
    sources = SQLModel.metadata.tables["sources"]
    with pytest.raises(SchemaUpgradeError) as caught:
        db_engine._column_sql(sources, sources.c.created_at, sqlite.dialect())
    assert str(caught.value) == (
        "cannot add column sources.created_at to the existing database: it is required and "
        "has no constant default, so it needs a migration"
    )
