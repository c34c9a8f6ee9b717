"""user_profile: indexes of the lowercased emails across realms

Every authenticated request looks its account up by email in every realm (the key is
compared afterwards, in constant time; see ``get_login_candidates``). The unique indexes
lead with ``realm_id``, so the lookup read every account, on SQLite and PostgreSQL alike,
and its cost grew with the accounts.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_user_profile_email", "user_profile", [sa.text("lower(email)")])
    op.create_index(
        "ix_user_profile_delivery_email", "user_profile", [sa.text("lower(delivery_email)")]
    )


def downgrade() -> None:
    op.drop_index("ix_user_profile_delivery_email", table_name="user_profile")
    op.drop_index("ix_user_profile_email", table_name="user_profile")
