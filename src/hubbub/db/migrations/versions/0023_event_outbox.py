"""event_outbox: events a command committed, for the running server to publish

``hubbub create-user`` (and the other commands) write beside a running server, in a
process of their own: without Redis the server's event queues live in its memory, out of
the command's reach, so a user created that way reached no open queue. The command's
transaction now also writes its events here; the server publishes and deletes them within
about a second.

Revision ID: 0023
Revises: 0022
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "event_outbox",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "realm_id", sa.Integer, sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=True
        ),
        sa.Column("event", sa.Text, nullable=True),
        sa.Column("user_ids", sa.Text, nullable=False),
        sa.Column("public_stream_except", sa.Text, nullable=True),
        sa.Column("created", sa.Double, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("event_outbox")
