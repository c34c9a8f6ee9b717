"""user_message on PostgreSQL: a view of the user-major rows and of staged ones

What migration 0019 did for SQLite. A send to a big stream inserted a row per recipient
into ``user_message``, each an entry in the primary key's and the unread index's
user-major B-trees, most of its time in PostgreSQL and the tail of a flood of sends
(``bench/pg_user_message_insert.py``). Into a table keyed by (message, user) the same
rows cost a third as much, and moving a second's worth of them into the user-major table
in user order costs less than inserting them there did (bench/results/postgresql.md,
*Staged rows on PostgreSQL*).

``user_message`` is renamed ``user_message_rows`` (its indexes and constraints keep their
names); ``user_message_staged`` holds the rows that sends write, until the server moves
them (``db/dialects/postgresql.py``); ``user_message`` becomes a view of both. On SQLite
nothing changes (0019 did it). Downgrading moves the staged rows back first.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

_VIEW = (
    "CREATE VIEW user_message AS"
    " SELECT user_profile_id, message_id, flags FROM user_message_rows"
    " UNION ALL SELECT user_profile_id, message_id, flags FROM user_message_staged"
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE user_message RENAME TO user_message_rows")
    op.execute(
        "CREATE TABLE user_message_staged ("
        " message_id INTEGER NOT NULL,"
        " user_profile_id INTEGER NOT NULL,"
        " flags BIGINT DEFAULT '0' NOT NULL,"
        " CONSTRAINT pk_user_message_staged PRIMARY KEY (message_id, user_profile_id))"
        # Emptied and filled again every second: a VACUUM that cut its empty last pages
        # off would hold the table's exclusive lock meanwhile, every send waiting.
        " WITH (vacuum_truncate = false)"
    )
    op.execute(
        "CREATE INDEX ix_user_message_staged_user"
        " ON user_message_staged (user_profile_id, message_id, flags)"
    )
    op.execute(_VIEW)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP VIEW user_message")
    op.execute(
        "INSERT INTO user_message_rows (user_profile_id, message_id, flags)"
        " SELECT user_profile_id, message_id, flags FROM user_message_staged"
        " ORDER BY user_profile_id, message_id"
        " ON CONFLICT (user_profile_id, message_id) DO UPDATE SET flags = excluded.flags"
    )
    op.execute("DROP TABLE user_message_staged")
    op.execute("ALTER TABLE user_message_rows RENAME TO user_message")
