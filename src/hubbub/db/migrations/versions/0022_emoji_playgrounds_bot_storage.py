"""Custom emoji, code playgrounds, bot storage and image thumbnails' metadata

Zulip 10.2's clients need each: the mobile app and the terminal client read the realm's
custom emoji from ``/register``, the web client and the apps link code blocks to
playgrounds, zulip-bots' stateful bots keep their state in ``/bot_storage``, and message
HTML for an uploaded image names its thumbnail and original size.

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "realm_emoji",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "realm_id", sa.Integer, sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("name", sa.String(60), nullable=False),
        sa.Column("file_name", sa.String(255), nullable=True),
        sa.Column(
            "author_id",
            sa.Integer,
            sa.ForeignKey("user_profile.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column("deactivated", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("is_animated", sa.Boolean, nullable=False, server_default=sa.false()),
    )
    op.create_index("ix_realm_emoji_realm_id_name", "realm_emoji", ["realm_id", "name"])
    op.create_index(
        "uq_realm_emoji_realm_id_name_active",
        "realm_emoji",
        ["realm_id", "name"],
        unique=True,
        sqlite_where=sa.text("NOT deactivated"),
        postgresql_where=sa.text("NOT deactivated"),
    )
    op.create_table(
        "realm_playground",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "realm_id", sa.Integer, sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("name", sa.String(60), nullable=False),
        sa.Column("pygments_language", sa.String(40), nullable=False),
        sa.Column("url_template", sa.Text, nullable=False),
        sa.UniqueConstraint("realm_id", "pygments_language", "name"),
    )
    op.create_table(
        "bot_storage",
        sa.Column(
            "bot_profile_id",
            sa.Integer,
            sa.ForeignKey("user_profile.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("key", sa.String(1000), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "image_attachment",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "realm_id", sa.Integer, sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("path_id", sa.String(255), nullable=False, unique=True),
        sa.Column("original_width_px", sa.Integer, nullable=False),
        sa.Column("original_height_px", sa.Integer, nullable=False),
        sa.Column("frames", sa.Integer, nullable=False, server_default="1"),
        sa.Column("content_type", sa.String(255), nullable=True),
        sa.Column("thumbnail_metadata", sa.Text, nullable=False, server_default="[]"),
    )


def downgrade() -> None:
    op.drop_table("image_attachment")
    op.drop_table("bot_storage")
    op.drop_table("realm_playground")
    op.drop_index("uq_realm_emoji_realm_id_name_active", table_name="realm_emoji")
    op.drop_index("ix_realm_emoji_realm_id_name", table_name="realm_emoji")
    op.drop_table("realm_emoji")
