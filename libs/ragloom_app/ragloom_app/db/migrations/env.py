"""Alembic's environment: migrations run on the connection :mod:`ragloom_app.db.migrate`
hands over (there is no ``alembic.ini`` and no URL here)."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

from ragloom_app.db import models  # noqa: F401  (registers the tables)

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    # SQLite alters a table by copying it; batch mode does that where a revision asks.
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
