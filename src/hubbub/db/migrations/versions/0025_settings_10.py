"""custom_profile_field.required and .editable_by_user; saved_snippet

Zulip 9.0 and 10.0 let administrators mark a custom profile field as required (feature
level 244) and keep users from changing their own value of a field (feature level 296);
existing fields stay optional and editable. Saved snippets (feature level 297) are
message texts a user keeps for reuse, each seen only by its owner.

Revision ID: 0025
Revises: 0024
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("custom_profile_field", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("required", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch_op.add_column(
            sa.Column("editable_by_user", sa.Boolean(), server_default=sa.true(), nullable=False)
        )
    op.create_table(
        "saved_snippet",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("date_created", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_saved_snippet_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_saved_snippet")),
    )
    with op.batch_alter_table("saved_snippet", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_saved_snippet_user_profile_id"), ["user_profile_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("saved_snippet", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_saved_snippet_user_profile_id"))
    op.drop_table("saved_snippet")
    with op.batch_alter_table("custom_profile_field", schema=None) as batch_op:
        batch_op.drop_column("editable_by_user")
        batch_op.drop_column("required")
