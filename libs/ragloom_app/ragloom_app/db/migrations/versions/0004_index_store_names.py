"""Each index's collections in shared stores get a name of their own.

Before, an index's Chroma collection and full-text collection were named by its id
(``ragloom_index_7``), so two deployments on one Chroma server (each numbering its first
index 1), or a new index given a deleted one's id, shared a collection. New indices get a
random name (``IndexRecord.store_name``); the indices already there keep the id's name,
which their stores hold (an empty ``store_name`` stands for it).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    columns = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("indices")}
    if "store_name" not in columns:  # made with the tables of this revision
        op.add_column("indices", sa.Column("store_name", sa.String(), nullable=True))


def downgrade() -> None:
    op.drop_column("indices", "store_name")
