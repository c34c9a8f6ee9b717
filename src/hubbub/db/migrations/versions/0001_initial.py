"""initial schema: realms, users, custom profile fields

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "realm",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("string_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("date_created", sa.Double(), nullable=False),
        sa.Column("deactivated", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("password_auth_enabled", sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.Column(
            "enable_spectator_access", sa.Boolean(), server_default=sa.false(), nullable=False
        ),
        sa.Column(
            "default_email_address_visibility",
            sa.SmallInteger(),
            server_default="1",
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_realm")),
        sa.UniqueConstraint("string_id", name=op.f("uq_realm_string_id")),
    )
    op.create_table(
        "custom_profile_field",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("hint", sa.String(length=80), server_default="", nullable=False),
        sa.Column("field_type", sa.SmallInteger(), nullable=False),
        sa.Column("field_data", sa.Text(), server_default="", nullable=False),
        sa.Column("order", sa.Integer(), nullable=False),
        sa.Column(
            "display_in_profile_summary", sa.Boolean(), server_default=sa.false(), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["realm_id"],
            ["realm.id"],
            name=op.f("fk_custom_profile_field_realm_id_realm"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_custom_profile_field")),
        sa.UniqueConstraint("realm_id", "name", name=op.f("uq_custom_profile_field_realm_id_name")),
    )
    with op.batch_alter_table("custom_profile_field", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_custom_profile_field_realm_id"), ["realm_id"], unique=False
        )

    op.create_table(
        "user_profile",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("delivery_email", sa.String(length=254), nullable=False),
        sa.Column("full_name", sa.String(length=100), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=True),
        sa.Column("api_key", sa.String(length=32), nullable=False),
        sa.Column("role", sa.SmallInteger(), nullable=False),
        sa.Column("is_active", sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.Column("is_billing_admin", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("is_bot", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("bot_type", sa.SmallInteger(), nullable=True),
        sa.Column("bot_owner_id", sa.Integer(), nullable=True),
        sa.Column("date_joined", sa.Double(), nullable=False),
        sa.Column("timezone", sa.String(length=40), server_default="", nullable=False),
        sa.Column("avatar_source", sa.String(length=1), server_default="G", nullable=False),
        sa.Column("avatar_version", sa.Integer(), server_default="1", nullable=False),
        sa.Column(
            "email_address_visibility", sa.SmallInteger(), server_default="1", nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["bot_owner_id"],
            ["user_profile.id"],
            name=op.f("fk_user_profile_bot_owner_id_user_profile"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["realm_id"],
            ["realm.id"],
            name=op.f("fk_user_profile_realm_id_realm"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_profile")),
        sa.UniqueConstraint("api_key", name=op.f("uq_user_profile_api_key")),
    )
    op.create_index(
        "uq_user_profile_realm_delivery_email",
        "user_profile",
        ["realm_id", sa.text("lower(delivery_email)")],
        unique=True,
    )
    op.create_index(
        "uq_user_profile_realm_email",
        "user_profile",
        ["realm_id", sa.text("lower(email)")],
        unique=True,
    )
    op.create_table(
        "custom_profile_field_value",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("field_id", sa.Integer(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("rendered_value", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["field_id"],
            ["custom_profile_field.id"],
            name=op.f("fk_custom_profile_field_value_field_id_custom_profile_field"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_custom_profile_field_value_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_custom_profile_field_value")),
        sa.UniqueConstraint(
            "user_profile_id",
            "field_id",
            name=op.f("uq_custom_profile_field_value_user_profile_id_field_id"),
        ),
    )
    with op.batch_alter_table("custom_profile_field_value", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_custom_profile_field_value_field_id"), ["field_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("custom_profile_field_value", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_custom_profile_field_value_field_id"))

    op.drop_table("custom_profile_field_value")
    op.drop_table("user_profile")
    with op.batch_alter_table("custom_profile_field", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_custom_profile_field_realm_id"))

    op.drop_table("custom_profile_field")
    op.drop_table("realm")
