"""user_message: per-user row counts in PostgreSQL's planner statistics

PostgreSQL keeps the most common values of a column with their frequencies, 100 by
default: on a realm of 1,000 users most users then count as the average user (33,000
rows on bench/messages.py's realm). For a user with 5,800 rows, a search for a word
with 8,800 matches was planned as a backward walk of all 1,000,000 messages (380 ms)
rather than of the user's own rows. With 1,000 values (ANALYZE then samples 300,000
rows), every user of such a realm has their own count, and the same searches' worst
case fell from 480 to ~130 ms. SQLite's statistics have no such setting.

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
