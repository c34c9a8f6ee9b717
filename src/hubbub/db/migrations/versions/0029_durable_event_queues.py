"""event_queue_saved, event_journal: the embedded server's event queues survive a crash

On SQLite the event queues live in the server's memory and were saved to a file only on a
clean shutdown, so a killed server lost every queue and the events sent since. Queue
registrations and the events not yet acknowledged now live in these two tables, written in
the transaction of the change an event describes (``events/durable_queues.py``).

Revision ID: 0029
Revises: 0028
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "event_queue_saved",
        sa.Column("queue_id", sa.String(64), primary_key=True),
        sa.Column("spec", sa.Text, nullable=False),
        sa.Column("base_id", sa.BigInteger, nullable=False),
        sa.Column("base_seq", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "event_journal",
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=False,
        ),
        sa.Column("realm_id", sa.Integer, nullable=True),
        sa.Column("queue_id", sa.String(64), nullable=True),
        sa.Column("event", sa.Text, nullable=False),
        sa.Column("user_ids", sa.Text, nullable=False),
        sa.Column("public_stream_except", sa.Text, nullable=True),
    )


def downgrade() -> None:
    op.drop_table("event_journal")
    op.drop_table("event_queue_saved")
