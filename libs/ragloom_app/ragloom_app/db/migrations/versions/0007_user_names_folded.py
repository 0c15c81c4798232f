"""User names are unique whatever their case, in the database too.

The account store refused a name that differs from another in case alone ("Alice" beside
"alice"), but it looked before it wrote: two such names added at the same moment both got
in. A unique index on ``lower(name)`` refuses the second. A database that already holds
such a pair (made before the store looked) keeps both: which account to keep is the
administrator's choice, not a migration's. Every start names them in the log and makes
the index once they are gone (``ragloom_app.db.migrate.fold_user_names``).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

INDEX = "ux_users_name_folded"


def upgrade() -> None:
    bind = op.get_bind()
    pairs = bind.execute(
        sa.text("SELECT lower(name) FROM users GROUP BY lower(name) HAVING count(*) > 1")
    ).all()
    if pairs:
        return  # kept, and named at every start until they are gone
    # A database made with the tables of this revision has it already (SQLite's
    # inspector cannot see an index on an expression, so it is not asked).
    op.create_index(INDEX, "users", [sa.text("lower(name)")], unique=True, if_not_exists=True)


def downgrade() -> None:
    op.drop_index(INDEX, table_name="users", if_exists=True)  # absent while a pair is kept
