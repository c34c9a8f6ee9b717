"""send keys: one message per (sender, queue_id, local_id), so retries do not duplicate

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "send_key",
        sa.Column("sender_id", sa.Integer(), nullable=False),
        sa.Column("queue_id", sa.String(length=64), nullable=False),
        sa.Column("local_id", sa.String(length=64), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("date_sent", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["sender_id"],
            ["user_profile.id"],
            name=op.f("fk_send_key_sender_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["message_id"],
            ["message.id"],
            name=op.f("fk_send_key_message_id_message"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("sender_id", "queue_id", "local_id", name=op.f("pk_send_key")),
    )
    op.create_index("ix_send_key_message_id", "send_key", ["message_id"])
    op.create_index("ix_send_key_date_sent", "send_key", ["date_sent"])


def downgrade() -> None:
    op.drop_table("send_key")
