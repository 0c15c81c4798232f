"""Create the database engine; its schema is brought to this version's by the alembic
migrations (:func:`ragloom_app.db.migrate.migrate`).

:func:`add_missing_columns` is what came before the migrations, kept for databases older
than their first revision (which lack, e.g., ``sources.attempts``): it adds a missing
column with its default by plain ``ALTER TABLE ... ADD COLUMN`` that SQLite and PostgreSQL
both run, never renames, drops or retypes one, and adds nothing to a current database. A
schema change from now on is a migration (``db/migrations/versions``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from sqlalchemy import Column, Table, event, inspect, literal, text
from sqlalchemy.engine import Dialect, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.schema import ScalarElementColumnDefault
from sqlmodel import SQLModel, create_engine

from ragloom_app.db import models  # noqa: F401  (registers the tables)
from ragloom_app.db.migrate import migrate

__all__ = ["SchemaUpgradeError", "add_missing_columns", "create_db_engine", "driver_connections"]

logger = logging.getLogger(__name__)


class SchemaUpgradeError(RuntimeError):
    """A column the models have cannot be added to an existing table without a migration."""


def _sqlite_pragmas(dbapi_connection: Any, _record: object) -> None:
    # WAL lets the UI read while an upload writes; foreign keys are off by default in SQLite.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def create_db_engine(url: str) -> Engine:
    """An engine for ``url``, its database migrated to this version's schema (SQLite gets
    WAL and foreign keys)."""
    is_sqlite = url.startswith("sqlite")
    if is_sqlite:
        engine = create_engine(url, connect_args={"check_same_thread": False})
    else:
        # A server restarts: a pooled connection it closed is found before it is used.
        engine = create_engine(url, pool_pre_ping=True)
    if is_sqlite:
        event.listen(engine, "connect", _sqlite_pragmas)
    migrate(engine)
    return engine


def driver_connections(engine: Engine) -> Callable[[], AbstractContextManager[Any]]:
    """Connections of ``engine``'s pool as the driver's own objects (psycopg's, for
    PostgreSQL), each given back to the pool at the end of its ``with`` block: for stores
    of the core library, which take a DB-API connection and know nothing of SQLAlchemy."""

    @contextmanager
    def connect() -> Iterator[Any]:
        pooled = engine.raw_connection()
        try:
            yield pooled.driver_connection
        finally:
            pooled.close()  # back to the pool, which rolls back what was left open

    return connect


def _column_sql(table: Table, column: Column, dialect: Dialect) -> str:
    """``name TYPE [DEFAULT value] [NOT NULL]`` of ``column``, for ``ADD COLUMN``."""
    sql = (
        f"{dialect.identifier_preparer.format_column(column)} "
        f"{column.type.compile(dialect=dialect)}"
    )
    default = column.default
    if isinstance(default, ScalarElementColumnDefault):
        value = literal(default.arg, type_=column.type).compile(
            dialect=dialect, compile_kwargs={"literal_binds": True}
        )
        sql += f" DEFAULT {value}"
    elif not column.nullable:
        # The rows already there need a value, and only a constant gives every row one.
        raise SchemaUpgradeError(
            f"cannot add column {table.name}.{column.name} to the existing database: it is "
            "required and has no constant default, so it needs a migration"
        )
    if not column.nullable:
        sql += " NOT NULL"
    return sql


def _columns_of(engine: Engine, table: str) -> set[str]:
    return {c["name"] for c in inspect(engine).get_columns(table)}


def add_missing_columns(engine: Engine) -> list[str]:
    """Add every model column an existing table lacks; returns them as ``table.column``.

    Each column is added in a transaction of its own. Another process starting at the
    same moment may add it first: that failure is ignored once the column is there.
    """
    dialect = engine.dialect
    existing = set(inspect(engine).get_table_names())
    added: list[str] = []
    for table in SQLModel.metadata.sorted_tables:
        if table.name not in existing:
            continue
        present = _columns_of(engine, table.name)
        for column in table.columns:
            if column.name in present:
                continue
            statement = (
                f"ALTER TABLE {dialect.identifier_preparer.format_table(table)} "
                f"ADD COLUMN {_column_sql(table, column, dialect)}"
            )
            try:
                with engine.begin() as connection:
                    connection.execute(text(statement))
            except DBAPIError:
                if column.name not in _columns_of(engine, table.name):
                    raise
                continue
            logger.warning("database upgraded: added the column %s.%s", table.name, column.name)
            added.append(f"{table.name}.{column.name}")
    return added
