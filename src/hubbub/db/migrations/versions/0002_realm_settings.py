"""realm.settings: organization settings that differ from their defaults (JSON)

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("realm", schema=None) as batch_op:
        batch_op.add_column(sa.Column("settings", sa.Text(), server_default="{}", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("realm", schema=None) as batch_op:
        batch_op.drop_column("settings")
