"""user_message: the unread index carries the flags

``/register`` reads a user's unread rows with their flags (mentions, and the message's
conversation beside them). The partial index of unread rows held only (user, message),
so each row's flags were looked up in the table, most of the query's time for a user
with thousands of unread messages. The flags are the index's last key column on both
databases (on PostgreSQL an index-only scan may then answer too). Rebuilding the index
reads all of user_message once.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_UNREAD = sa.text("(flags & 1) = 0")


def _recreate(columns: list[str]) -> None:
    op.drop_index("ix_user_message_unread", table_name="user_message")
    op.create_index(
        "ix_user_message_unread",
        "user_message",
        columns,
        sqlite_where=_UNREAD,
        postgresql_where=_UNREAD,
    )


def upgrade() -> None:
    _recreate(["user_profile_id", "message_id", "flags"])


def downgrade() -> None:
    _recreate(["user_profile_id", "message_id"])
