"""user_message: a partial index of each user's direct-message rows

``recent_private_conversations`` in /register reads a user's newest direct messages; without
this index it walks every row of the user (tens of thousands on a busy realm) to find the
few with the is_private flag.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

PREDICATE = "(flags & 2048) != 0"


def upgrade() -> None:
    op.create_index(
        "ix_user_message_private",
        "user_message",
        ["user_profile_id", "message_id"],
        sqlite_where=sa.text(PREDICATE),
        postgresql_where=sa.text(PREDICATE),
    )


def downgrade() -> None:
    op.drop_index("ix_user_message_private", table_name="user_message")
