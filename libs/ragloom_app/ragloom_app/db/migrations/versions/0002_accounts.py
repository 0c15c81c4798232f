"""Accounts: users, login sessions, API keys, saved chat defaults; owners of indices and
conversations (everything of before belongs to the local user, its indices shared).

Each step is skipped when what it makes is there already: a database made before
migrations existed may hold some of it (``ragloom_app.db.migrate`` creates its missing
tables before stamping it with revision 0001).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _columns(table: str) -> set[str]:
    return {c["name"] for c in sa.inspect(op.get_bind()).get_columns(table)}


def _indexes(table: str) -> set[str]:
    return {str(i["name"]) for i in sa.inspect(op.get_bind()).get_indexes(table)}


def _add_owner_column(table: str, column: sa.Column) -> None:
    if column.name not in _columns(table):
        op.add_column(table, column)
    if column.name == "owner" and f"ix_{table}_owner" not in _indexes(table):
        op.create_index(f"ix_{table}_owner", table, ["owner"])


def upgrade() -> None:
    # A server default fills the rows already there; the models give new rows theirs.
    _add_owner_column(
        "indices", sa.Column("owner", sa.String(), nullable=False, server_default="local")
    )
    _add_owner_column(
        "indices", sa.Column("shared", sa.Boolean(), nullable=False, server_default=sa.true())
    )
    _add_owner_column(
        "conversations", sa.Column("owner", sa.String(), nullable=False, server_default="local")
    )
    tables = set(sa.inspect(op.get_bind()).get_table_names())
    if "users" in tables:
        return  # made with the tables of this revision (see the module docstring)
    op.create_table(
        "users",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("password_hash", sa.String(), nullable=False),
        sa.Column("is_admin", sa.Boolean(), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_users_name", "users", ["name"], unique=True)
    op.create_table(
        "sessions",
        sa.Column("token_hash", sa.String(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("ix_sessions_user_id", "sessions", ["user_id"])
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("key_hash", sa.String(), nullable=False),
        sa.Column("prefix", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_api_keys_key_hash", "api_keys", ["key_hash"], unique=True)
    op.create_index("ix_api_keys_user_id", "api_keys", ["user_id"])
    op.create_table(
        "user_settings",
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("user_id"),
    )


def downgrade() -> None:
    for table in ("user_settings", "api_keys", "sessions", "users"):
        op.drop_table(table)
    with op.batch_alter_table("conversations") as batch:
        batch.drop_index("ix_conversations_owner")
        batch.drop_column("owner")
    with op.batch_alter_table("indices") as batch:
        batch.drop_index("ix_indices_owner")
        batch.drop_column("shared")
        batch.drop_column("owner")
