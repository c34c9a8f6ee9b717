"""scheduled messages, attachments, push devices and the push queue

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

_PENDING = "NOT delivered AND NOT failed"


def _fk(table: str, column: str, target: str, ondelete: str = "CASCADE") -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column],
        [f"{target}.id"],
        name=op.f(f"fk_{table}_{column}_{target}"),
        ondelete=ondelete,
    )


def upgrade() -> None:
    op.create_table(
        "attachment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("path_id", sa.String(length=255), nullable=False),
        sa.Column("file_name", sa.String(length=255), nullable=False),
        sa.Column("content_type", sa.String(length=255), nullable=True),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("create_time", sa.Double(), nullable=False),
        _fk("attachment", "owner_id", "user_profile"),
        _fk("attachment", "realm_id", "realm"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attachment")),
        sa.UniqueConstraint("path_id", name=op.f("uq_attachment_path_id")),
    )
    op.create_index("ix_attachment_owner_id", "attachment", ["owner_id"])
    op.create_table(
        "push_device",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.SmallInteger(), nullable=False),
        sa.Column("token", sa.String(length=4096), nullable=False),
        sa.Column("ios_app_id", sa.String(length=255), nullable=True),
        sa.Column("last_updated", sa.Double(), nullable=False),
        _fk("push_device", "user_profile_id", "user_profile"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_push_device")),
        sa.UniqueConstraint(
            "user_profile_id",
            "kind",
            "token",
            name=op.f("uq_push_device_user_profile_id_kind_token"),
        ),
    )
    op.create_table(
        "attachment_message",
        sa.Column("attachment_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        _fk("attachment_message", "attachment_id", "attachment"),
        _fk("attachment_message", "message_id", "message"),
        sa.PrimaryKeyConstraint("attachment_id", "message_id", name=op.f("pk_attachment_message")),
    )
    op.create_index("ix_attachment_message_message_id", "attachment_message", ["message_id"])
    op.create_table(
        "push_notification_queue",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("trigger", sa.String(length=40), nullable=False),
        sa.Column("due_time", sa.Double(), nullable=False),
        _fk("push_notification_queue", "message_id", "message"),
        _fk("push_notification_queue", "user_profile_id", "user_profile"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_push_notification_queue")),
    )
    op.create_index("ix_push_notification_queue_due_time", "push_notification_queue", ["due_time"])
    op.create_index(
        "ix_push_notification_queue_message_id", "push_notification_queue", ["message_id"]
    )
    op.create_table(
        "scheduled_message",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("sender_id", sa.Integer(), nullable=False),
        sa.Column("message_type", sa.String(length=10), nullable=False),
        sa.Column("stream_id", sa.Integer(), nullable=True),
        sa.Column("to_user_ids", sa.Text(), nullable=True),
        sa.Column("topic", sa.String(length=60), server_default="", nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("rendered_content", sa.Text(), nullable=False),
        sa.Column("scheduled_timestamp", sa.Double(), nullable=False),
        sa.Column("read_by_sender", sa.Boolean(), nullable=True),
        sa.Column("sending_client", sa.String(length=30), nullable=False),
        sa.Column("delivered", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("delivered_message_id", sa.Integer(), nullable=True),
        sa.Column("failed", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("failure_message", sa.Text(), nullable=True),
        _fk("scheduled_message", "delivered_message_id", "message", ondelete="SET NULL"),
        _fk("scheduled_message", "realm_id", "realm"),
        _fk("scheduled_message", "sender_id", "user_profile"),
        _fk("scheduled_message", "stream_id", "stream"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scheduled_message")),
    )
    op.create_index(
        "ix_scheduled_message_due",
        "scheduled_message",
        ["scheduled_timestamp"],
        sqlite_where=sa.text(_PENDING),
        postgresql_where=sa.text(_PENDING),
    )
    op.create_index("ix_scheduled_message_sender_id", "scheduled_message", ["sender_id"])
    op.create_table(
        "scheduled_attachment",
        sa.Column("attachment_id", sa.Integer(), nullable=False),
        sa.Column("scheduled_id", sa.Integer(), nullable=False),
        _fk("scheduled_attachment", "attachment_id", "attachment"),
        _fk("scheduled_attachment", "scheduled_id", "scheduled_message"),
        sa.PrimaryKeyConstraint(
            "attachment_id", "scheduled_id", name=op.f("pk_scheduled_attachment")
        ),
    )
    op.create_index(
        "ix_scheduled_attachment_scheduled_id", "scheduled_attachment", ["scheduled_id"]
    )


def downgrade() -> None:
    op.drop_table("scheduled_attachment")
    op.drop_table("scheduled_message")
    op.drop_table("push_notification_queue")
    op.drop_table("attachment_message")
    op.drop_table("push_device")
    op.drop_table("attachment")
