"""user settings, drafts, linkifiers, muted users, alert words, presence, user status

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "realm_linkifier",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("pattern", sa.Text(), nullable=False),
        sa.Column("url_template", sa.Text(), nullable=False),
        sa.Column("order", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"],
            ["realm.id"],
            name=op.f("fk_realm_linkifier_realm_id_realm"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_realm_linkifier")),
        sa.UniqueConstraint(
            "realm_id", "pattern", name=op.f("uq_realm_linkifier_realm_id_pattern")
        ),
    )
    with op.batch_alter_table("realm_linkifier", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_realm_linkifier_realm_id"), ["realm_id"], unique=False)

    op.create_table(
        "realm_user_default",
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("settings", sa.Text(), server_default="{}", nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"],
            ["realm.id"],
            name=op.f("fk_realm_user_default_realm_id_realm"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("realm_id", name=op.f("pk_realm_user_default")),
    )
    op.create_table(
        "alert_word",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("word", sa.String(length=100), nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"],
            ["realm.id"],
            name=op.f("fk_alert_word_realm_id_realm"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_alert_word_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_word")),
    )
    # Case-insensitive uniqueness (an expression index autogenerate cannot see).
    op.create_index(
        "uq_alert_word_user_word",
        "alert_word",
        ["user_profile_id", sa.text("lower(word)")],
        unique=True,
    )
    op.create_table(
        "draft",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=10), nullable=False),
        sa.Column("to", sa.Text(), server_default="[]", nullable=False),
        sa.Column("topic", sa.String(length=60), server_default="", nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("last_edit_time", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_draft_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_draft")),
    )
    with op.batch_alter_table("draft", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_draft_user_profile_id"), ["user_profile_id"], unique=False
        )

    op.create_table(
        "muted_user",
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("muted_user_id", sa.Integer(), nullable=False),
        sa.Column("date_muted", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["muted_user_id"],
            ["user_profile.id"],
            name=op.f("fk_muted_user_muted_user_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_muted_user_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_profile_id", "muted_user_id", name=op.f("pk_muted_user")),
    )
    with op.batch_alter_table("muted_user", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_muted_user_muted_user_id"), ["muted_user_id"], unique=False
        )

    op.create_table(
        "user_presence",
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("last_connected_time", sa.Double(), nullable=True),
        sa.Column("last_active_time", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(
            ["realm_id"],
            ["realm.id"],
            name=op.f("fk_user_presence_realm_id_realm"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_user_presence_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_profile_id", name=op.f("pk_user_presence")),
    )
    with op.batch_alter_table("user_presence", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_user_presence_realm_id"), ["realm_id"], unique=False)

    op.create_table(
        "user_setting",
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("settings", sa.Text(), server_default="{}", nullable=False),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_user_setting_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_profile_id", name=op.f("pk_user_setting")),
    )
    op.create_table(
        "user_status",
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("status_text", sa.String(length=60), server_default="", nullable=False),
        sa.Column("emoji_name", sa.String(length=100), server_default="", nullable=False),
        sa.Column("emoji_code", sa.String(length=100), server_default="", nullable=False),
        sa.Column(
            "reaction_type", sa.String(length=30), server_default="unicode_emoji", nullable=False
        ),
        sa.Column("timestamp", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"],
            ["realm.id"],
            name=op.f("fk_user_status_realm_id_realm"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_user_status_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_profile_id", name=op.f("pk_user_status")),
    )


def downgrade() -> None:
    op.drop_table("user_status")
    op.drop_table("user_setting")
    with op.batch_alter_table("user_presence", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_user_presence_realm_id"))

    op.drop_table("user_presence")
    with op.batch_alter_table("muted_user", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_muted_user_muted_user_id"))

    op.drop_table("muted_user")
    with op.batch_alter_table("draft", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_draft_user_profile_id"))

    op.drop_table("draft")
    op.drop_index("uq_alert_word_user_word", table_name="alert_word")
    op.drop_table("alert_word")
    op.drop_table("realm_user_default")
    with op.batch_alter_table("realm_linkifier", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_realm_linkifier_realm_id"))

    op.drop_table("realm_linkifier")
