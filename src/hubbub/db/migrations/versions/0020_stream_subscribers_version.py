"""stream_subscribers_version: a count of each stream's subscriber changes, kept by triggers

A send to a stream reads its subscribers under SQLite's single writer, a large part of
its hold for the biggest streams (bench/results/caches.md). A process now keeps each stream's active
subscribers as it last read them, with this count and the realm's people version
(``queries/subscriber_cache.py``); the send reads both counts in the statement that
reads the stream. Triggers keep the count, so that no write of a subscription (the
server's, a command's, another worker's) can forget it. Only what changes who is
subscribed counts: a row added or deleted, or its ``active``, user or stream changed
(not its color or notification settings). On SQLite one trigger per statement kind; on
PostgreSQL one function for all three, run at the COMMIT, as migration 0017's.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_BUMP = (
    "INSERT INTO stream_subscribers_version (stream_id, version) VALUES ({stream}, 1)"
    " ON CONFLICT (stream_id) DO UPDATE SET version = stream_subscribers_version.version + 1"
)
# The old row's stream, counted only when a row moves to another stream. (An INSERT ...
# SELECT with an upsert needs its WHERE clause: SQLite's parser.)
_BUMP_OLD_STREAM = (
    "INSERT INTO stream_subscribers_version (stream_id, version)"
    " SELECT OLD.stream_id, 1 WHERE OLD.stream_id IS NOT NEW.stream_id"
    " ON CONFLICT (stream_id) DO UPDATE SET version = stream_subscribers_version.version + 1"
)
_CHANGED = (
    "OLD.active IS NOT NEW.active OR OLD.user_profile_id IS NOT NEW.user_profile_id"
    " OR OLD.stream_id IS NOT NEW.stream_id"
)
_SQLITE_UP = [
    "CREATE TRIGGER subscription_subscribers_insert AFTER INSERT ON subscription BEGIN "
    + _BUMP.format(stream="NEW.stream_id")
    + "; END",
    "CREATE TRIGGER subscription_subscribers_delete AFTER DELETE ON subscription BEGIN "
    + _BUMP.format(stream="OLD.stream_id")
    + "; END",
    "CREATE TRIGGER subscription_subscribers_update"
    " AFTER UPDATE OF active, user_profile_id, stream_id ON subscription"
    f" WHEN {_CHANGED} BEGIN "
    + _BUMP.format(stream="NEW.stream_id")
    + f"; {_BUMP_OLD_STREAM}; END",
]
_SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS subscription_subscribers_insert",
    "DROP TRIGGER IF EXISTS subscription_subscribers_delete",
    "DROP TRIGGER IF EXISTS subscription_subscribers_update",
]
_POSTGRESQL_UP = [
    "CREATE FUNCTION stream_subscribers_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN"
    " IF TG_OP = 'UPDATE' AND NOT ("
    + _CHANGED.replace("IS NOT", "IS DISTINCT FROM")
    + ") THEN RETURN NULL; END IF;"
    " IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.stream_id <> NEW.stream_id) THEN "
    + _BUMP.format(stream="OLD.stream_id")
    + "; END IF;"
    " IF TG_OP <> 'DELETE' THEN " + _BUMP.format(stream="NEW.stream_id") + "; END IF;"
    " RETURN NULL; END $$",
    # Deferred to the COMMIT: the count's row is locked last, after every subscription
    # row the transaction changes (see migration 0017).
    "CREATE CONSTRAINT TRIGGER subscription_subscribers AFTER INSERT OR UPDATE OR DELETE"
    " ON subscription DEFERRABLE INITIALLY DEFERRED"
    " FOR EACH ROW EXECUTE FUNCTION stream_subscribers_version_bump()",
]
_POSTGRESQL_DOWN = [
    "DROP TRIGGER IF EXISTS subscription_subscribers ON subscription",
    "DROP FUNCTION IF EXISTS stream_subscribers_version_bump()",
]


def upgrade() -> None:
    # No foreign key: the count outlives its stream, so that a stream id SQLite hands out
    # again never starts from a count a process kept for the old one.
    op.create_table(
        "stream_subscribers_version",
        sa.Column("stream_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("version", sa.BigInteger, nullable=False, server_default="0"),
    )
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in _SQLITE_UP if sqlite else _POSTGRESQL_UP:
        op.execute(statement)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in _SQLITE_DOWN if sqlite else _POSTGRESQL_DOWN:
        op.execute(statement)
    op.drop_table("stream_subscribers_version")
