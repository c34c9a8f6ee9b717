"""user_presence.last_update_id and presence_sequence: incremental presence fetches

Zulip 9.0 (feature level 263) lets a client ask only for the presence rows that changed
after the last update id it saw. Every row gets the id of the write that last changed
it, taken from its realm's count in presence_sequence. The rows already there are
numbered 1, 2, ... within their realm (in user id order), and each realm's count starts
at its highest number, so that the next write is newer than all of them.

Revision ID: 0026
Revises: 0025
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

# A correlated count, which both dialects run alike (a realm has at most a few thousand
# rows, and the migration runs once).
_NUMBER_ROWS = (
    "UPDATE user_presence SET last_update_id = ("
    "SELECT COUNT(*) FROM user_presence AS earlier"
    " WHERE earlier.realm_id = user_presence.realm_id"
    " AND earlier.user_profile_id <= user_presence.user_profile_id)"
)
_START_COUNTS = (
    "INSERT INTO presence_sequence (realm_id, last_update_id)"
    " SELECT realm_id, MAX(last_update_id) FROM user_presence GROUP BY realm_id"
)


def upgrade() -> None:
    op.create_table(
        "presence_sequence",
        sa.Column("realm_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("last_update_id", sa.BigInteger, nullable=False, server_default="0"),
    )
    op.add_column(
        "user_presence",
        sa.Column("last_update_id", sa.BigInteger, nullable=False, server_default="0"),
    )
    op.execute(_NUMBER_ROWS)
    op.execute(_START_COUNTS)


def downgrade() -> None:
    with op.batch_alter_table("user_presence", schema=None) as batch_op:
        batch_op.drop_column("last_update_id")
    op.drop_table("presence_sequence")
