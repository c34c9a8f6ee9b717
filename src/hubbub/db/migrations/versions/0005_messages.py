"""messages

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
    op.create_table(
        "recipient",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("type", sa.SmallInteger(), nullable=False),
        sa.Column("type_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_recipient")),
        sa.UniqueConstraint("type", "type_id", name=op.f("uq_recipient_type_type_id")),
    )
    op.create_table(
        "direct_message_group",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("group_hash", sa.String(length=40), nullable=False),
        sa.Column("group_size", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"],
            ["realm.id"],
            name=op.f("fk_direct_message_group_realm_id_realm"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_direct_message_group")),
        sa.UniqueConstraint("group_hash", name=op.f("uq_direct_message_group_group_hash")),
    )
    op.create_table(
        "direct_message_group_member",
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["direct_message_group.id"],
            name=op.f("fk_direct_message_group_member_group_id_direct_message_group"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_direct_message_group_member_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "group_id", "user_profile_id", name=op.f("pk_direct_message_group_member")
        ),
    )
    with op.batch_alter_table("direct_message_group_member", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_direct_message_group_member_user_profile_id"),
            ["user_profile_id"],
            unique=False,
        )

    op.create_table(
        "message",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("sender_id", sa.Integer(), nullable=False),
        sa.Column("recipient_id", sa.Integer(), nullable=False),
        sa.Column("topic", sa.String(length=60), server_default="", nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("rendered_content", sa.Text(), nullable=True),
        sa.Column("rendered_content_version", sa.Integer(), nullable=True),
        sa.Column("date_sent", sa.Double(), nullable=False),
        sa.Column("sending_client", sa.String(length=30), nullable=False),
        sa.Column("last_edit_time", sa.Double(), nullable=True),
        sa.Column("edit_history", sa.Text(), nullable=True),
        sa.Column("has_attachment", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("has_image", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("has_link", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("is_me_message", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_message_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["recipient_id"], ["recipient.id"], name=op.f("fk_message_recipient_id_recipient")
        ),
        sa.ForeignKeyConstraint(
            ["sender_id"],
            ["user_profile.id"],
            name=op.f("fk_message_sender_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_message")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("message", schema=None) as batch_op:
        batch_op.create_index("ix_message_realm_id_id", ["realm_id", "id"], unique=False)
        batch_op.create_index("ix_message_recipient_id_id", ["recipient_id", "id"], unique=False)
        batch_op.create_index("ix_message_sender_id_id", ["sender_id", "id"], unique=False)

    # The stream+topic narrow (an expression index autogenerate cannot see).
    op.create_index(
        "ix_message_recipient_topic_id",
        "message",
        ["recipient_id", sa.text("lower(topic)"), "id"],
    )

    op.create_table(
        "user_message",
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("flags", sa.BigInteger(), server_default="0", nullable=False),
        sa.ForeignKeyConstraint(
            ["message_id"],
            ["message.id"],
            name=op.f("fk_user_message_message_id_message"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_user_message_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_profile_id", "message_id", name=op.f("pk_user_message")),
    )
    with op.batch_alter_table("user_message", schema=None) as batch_op:
        batch_op.create_index("ix_user_message_message_id", ["message_id"], unique=False)
        batch_op.create_index(
            "ix_user_message_starred",
            ["user_profile_id", "message_id"],
            unique=False,
            sqlite_where=sa.text("(flags & 2) != 0"),
            postgresql_where=sa.text("(flags & 2) != 0"),
        )
        batch_op.create_index(
            "ix_user_message_unread",
            ["user_profile_id", "message_id"],
            unique=False,
            sqlite_where=sa.text("(flags & 1) = 0"),
            postgresql_where=sa.text("(flags & 1) = 0"),
        )


def downgrade() -> None:
    with op.batch_alter_table("user_message", schema=None) as batch_op:
        batch_op.drop_index(
            "ix_user_message_unread",
            sqlite_where=sa.text("(flags & 1) = 0"),
            postgresql_where=sa.text("(flags & 1) = 0"),
        )
        batch_op.drop_index(
            "ix_user_message_starred",
            sqlite_where=sa.text("(flags & 2) != 0"),
            postgresql_where=sa.text("(flags & 2) != 0"),
        )
        batch_op.drop_index("ix_user_message_message_id")

    op.drop_table("user_message")
    op.drop_index("ix_message_recipient_topic_id", table_name="message")
    with op.batch_alter_table("message", schema=None) as batch_op:
        batch_op.drop_index("ix_message_sender_id_id")
        batch_op.drop_index("ix_message_recipient_id_id")
        batch_op.drop_index("ix_message_realm_id_id")

    op.drop_table("message")
    with op.batch_alter_table("direct_message_group_member", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_direct_message_group_member_user_profile_id"))

    op.drop_table("direct_message_group_member")
    op.drop_table("direct_message_group")
    op.drop_table("recipient")
