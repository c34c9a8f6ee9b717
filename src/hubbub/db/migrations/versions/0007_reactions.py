"""reactions and submessages

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


def upgrade() -> None:
    op.create_table(
        "reaction",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("emoji_name", sa.String(length=64), nullable=False),
        sa.Column("emoji_code", sa.String(length=64), nullable=False),
        sa.Column("reaction_type", sa.String(length=30), nullable=False),
        sa.ForeignKeyConstraint(
            ["message_id"],
            ["message.id"],
            name=op.f("fk_reaction_message_id_message"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_reaction_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reaction")),
        sa.UniqueConstraint(
            "user_profile_id",
            "message_id",
            "emoji_code",
            "reaction_type",
            name=op.f("uq_reaction_user_profile_id_message_id_emoji_code_reaction_type"),
        ),
    )
    op.create_index(op.f("ix_reaction_message_id"), "reaction", ["message_id"])
    op.create_table(
        "submessage",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("sender_id", sa.Integer(), nullable=False),
        sa.Column("msg_type", sa.String(length=100), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["message_id"],
            ["message.id"],
            name=op.f("fk_submessage_message_id_message"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["sender_id"],
            ["user_profile.id"],
            name=op.f("fk_submessage_sender_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_submessage")),
    )
    op.create_index(op.f("ix_submessage_message_id"), "submessage", ["message_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_submessage_message_id"), table_name="submessage")
    op.drop_table("submessage")
    op.drop_index(op.f("ix_reaction_message_id"), table_name="reaction")
    op.drop_table("reaction")
