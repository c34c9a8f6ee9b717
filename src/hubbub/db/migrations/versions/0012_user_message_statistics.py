"""user_message: per-user row counts in PostgreSQL's planner statistics

PostgreSQL keeps the most common values of a column with their frequencies, 100 by
default: on a realm of 1,000 users most users then count as the average user. For a
user with far fewer rows than that, a search for a common word was planned as a
backward walk of every message rather than of the user's own rows. With 1,000 values
(ANALYZE then samples more rows), every user of such a realm has their own count
(bench/results/where-the-time-goes.md). SQLite's statistics have no such setting.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE user_message ALTER COLUMN user_profile_id SET STATISTICS 1000")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE user_message ALTER COLUMN user_profile_id SET STATISTICS -1")
