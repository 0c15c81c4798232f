"""An index an import is filling says so in the database, to every data folder.

An import marked the index it fills with a lock file in the importing process's data
folder only. A process with a folder of its own (another machine's, in a team
deployment) showed that index without "being imported", checked it as if it were whole,
and never learnt that a killed import had left it half made. ``IndexRecord.importing_by``
names the import (its process, as a conversation's hold does) while it runs.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    columns = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("indices")}
    if "importing_by" not in columns:  # made with the tables of this revision
        op.add_column("indices", sa.Column("importing_by", sa.String(), nullable=True))


def downgrade() -> None:
    op.drop_column("indices", "importing_by")
