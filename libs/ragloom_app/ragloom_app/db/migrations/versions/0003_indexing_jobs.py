"""Indexing jobs: files queued for a worker, with their progress and outcomes.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "indexing_jobs" in set(sa.inspect(op.get_bind()).get_table_names()):
        return  # made with the tables of this revision (see 0002's docstring)
    op.create_table(
        "indexing_jobs",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("index_id", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column(
            "status",
            sa.Enum("QUEUED", "RUNNING", "DONE", "FAILED", "CANCELLED", name="jobstatus"),
            nullable=False,
        ),
        sa.Column("files", sa.JSON(), nullable=True),
        sa.Column("outcomes", sa.JSON(), nullable=True),
        sa.Column("files_total", sa.Integer(), nullable=False),
        sa.Column("files_done", sa.Integer(), nullable=False),
        sa.Column("fraction", sa.Float(), nullable=False),
        sa.Column("current", sa.String(), nullable=True),
        sa.Column("error", sa.String(), nullable=True),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("worker", sa.String(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_indexing_jobs_index_id", "indexing_jobs", ["index_id"])
    op.create_index("ix_indexing_jobs_owner", "indexing_jobs", ["owner"])
    op.create_index("ix_indexing_jobs_status", "indexing_jobs", ["status"])


def downgrade() -> None:
    op.drop_table("indexing_jobs")
    sa.Enum(name="jobstatus").drop(op.get_bind(), checkfirst=True)
