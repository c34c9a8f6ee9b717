"""user_message: no foreign-key constraints on PostgreSQL

PostgreSQL checks a foreign key with a trigger per inserted row that looks up, and locks
FOR KEY SHARE, the referenced row: a send to a big stream ran two such lookups per
recipient, most of its insert's time, and concurrent sends to one stream took shared
locks on the same user rows. hubbub writes these rows only
for users and messages it has just read or written in the same transaction, deletes a
message's rows itself before the message (``actions/delete_message.py``), and never
deletes users or realms. SQLite keeps the constraints: its check is a cheap B-tree
lookup.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

CONSTRAINTS = {
    "fk_user_message_user_profile_id_user_profile": ("user_profile_id", "user_profile"),
    "fk_user_message_message_id_message": ("message_id", "message"),
}


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name in CONSTRAINTS:
        op.drop_constraint(name, "user_message", type_="foreignkey")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name, (column, target) in CONSTRAINTS.items():
        op.create_foreign_key(name, "user_message", target, [column], ["id"], ondelete="CASCADE")
