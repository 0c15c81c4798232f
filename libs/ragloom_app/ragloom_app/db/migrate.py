"""Bring an app database to this version's schema, keeping its data: :func:`migrate`.

A database is one of four kinds, told apart by alembic's version table and the tables it
holds:

- **new** (no table of the app): the tables are created as the models say and stamped
  with the newest revision, without running every migration from the first;
- **versioned**: the migrations it lacks run (``alembic upgrade head``);
- **made before migrations, before accounts** (the previous release's, or older): its
  missing tables are created, it is stamped with the first revision (the schema of that
  release), then upgraded (the revisions after the first skip what is there already);
- **made before migrations, with accounts** (a development version of this release): the
  missing tables are created, then it is stamped with the newest revision.

After any of them, :func:`~ragloom_app.db.engine.add_missing_columns` adds what a database
older than the first revision still lacks (it adds nothing to one that is current), and
:func:`fold_user_names` the unique index on user names a migration could not make. Two
processes starting on the same database migrate one after the other: a lock file beside a
SQLite database, an advisory lock in PostgreSQL.
"""

from __future__ import annotations

import fcntl
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.resources import files
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlmodel import SQLModel

__all__ = ["BEFORE_ACCOUNTS", "current_revision", "fold_user_names", "head_revision", "migrate"]

logger = logging.getLogger(__name__)

BEFORE_ACCOUNTS = "0001"
"""The revision of the schema made before migrations existed, without accounts."""
_MIGRATION_LOCK = 7_261_023_118  # PostgreSQL's advisory lock key of Ragloom's migrations
_CASE_PAIRS = "SELECT lower(name) FROM users GROUP BY lower(name) HAVING count(*) > 1"
# As db.models.UserRecord declares it (migration 0007).
_FOLDED_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS ux_users_name_folded ON users (lower(name))"


def _config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(files("ragloom_app.db") / "migrations"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision: the schema of the models."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision ``engine``'s database is stamped with (``None``: none)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


@contextmanager
def _one_at_a_time(engine: Engine) -> Iterator[None]:
    """Hold the migration lock of ``engine``'s database while the block runs."""
    database = engine.url.database
    if engine.dialect.name == "sqlite" and database and database != ":memory:":
        lock_path = Path(database).with_name(Path(database).name + ".migrating")
        with lock_path.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        return
    if engine.dialect.name == "postgresql":
        with engine.connect() as connection:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _MIGRATION_LOCK})
            try:
                yield
            finally:
                connection.execute(
                    text("SELECT pg_advisory_unlock(:key)"), {"key": _MIGRATION_LOCK}
                )
        return
    yield


def migrate(engine: Engine) -> str:
    """Bring ``engine``'s database to the newest revision (see the module docstring);
    returns what was done: ``created``, ``upgraded``, ``adopted`` or ``current``."""
    from ragloom_app.db.engine import add_missing_columns

    head = head_revision()
    with _one_at_a_time(engine), engine.begin() as connection:
        config = _config(connection)
        current = MigrationContext.configure(connection).get_current_revision()
        tables = set(inspect(connection).get_table_names())
        if current is None and not tables & set(SQLModel.metadata.tables):
            SQLModel.metadata.create_all(connection)
            command.stamp(config, "head")
            done = "created"
        elif current is None and "users" in tables:
            SQLModel.metadata.create_all(connection)
            command.stamp(config, "head")
            done = "adopted"
        else:
            if current is None:
                # Its missing tables first (an older one may lack some); the revisions
                # after the first skip what is there already.
                SQLModel.metadata.create_all(connection)
                current = BEFORE_ACCOUNTS
                command.stamp(config, current)
            done = "current" if current == head else "upgraded"
            if done == "upgraded":
                logger.warning("upgrading the database from revision %s to %s", current, head)
            command.upgrade(config, "head")
        fold_user_names(connection)
    add_missing_columns(engine)
    return done


def fold_user_names(connection: Connection) -> None:
    """Make the unique index on ``lower(users.name)`` where it is missing (a database
    adopted without it, or one whose names that differ in case alone were kept by the
    upgrade, until they are gone); while any are left, name them in the log."""
    pairs = connection.execute(text(_CASE_PAIRS)).scalars().all()
    if pairs:
        logger.warning(
            "users whose names differ in case alone (%s): delete all but one of each "
            "(`ragloom users delete`) so that the database refuses such names by itself",
            ", ".join(sorted(pairs)),
        )
        return
    connection.execute(text(_FOLDED_INDEX))
