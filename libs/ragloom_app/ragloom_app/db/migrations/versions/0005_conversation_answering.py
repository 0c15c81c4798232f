"""A conversation says until when an answer is being written in it.

Two questions answered at once in one conversation stored their turns interleaved (the
second question before the first answer), and each was answered without the other in
its history. ``Conversation.answering_until`` is held while an answer is written, by
whichever process writes it, so another question waits its turn; it lapses on its own
when that process died, or at once when that process is known dead (``answering_by``
names it).

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    columns = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("conversations")}
    if "answering_until" not in columns:  # made with the tables of this revision
        op.add_column(
            "conversations", sa.Column("answering_until", sa.DateTime(timezone=True), nullable=True)
        )
    if "answering_by" not in columns:
        op.add_column("conversations", sa.Column("answering_by", sa.String(), nullable=True))


def downgrade() -> None:
    op.drop_column("conversations", "answering_by")
    op.drop_column("conversations", "answering_until")
