"""user_message on SQLite: a view of the user-major rows and of staged ones

A send to a big stream wrote one leaf of each recipient's range of the user-major table,
a page of WAL per recipient, with the single writer held, and the sends queued behind it
made the tail of a flood of sends. The table is renamed
``user_message_rows``; a send's rows now go into ``user_message_staged``, keyed by
(message, user), where they are appended, until the server moves them into
``user_message_rows`` (``db/dialects/sqlite_staged.py``). ``user_message`` becomes a
view of both tables, so that every read sees each row once, wherever it is.

The rename keeps the table's rows, constraints and index names; the planner's
statistics follow it (SQLite's rename leaves ``sqlite_stat1`` under the old name).
Downgrading moves the staged rows back first. PostgreSQL: nothing changes.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

_VIEW = (
    "CREATE VIEW user_message AS"
    " SELECT user_profile_id, message_id, flags FROM user_message_rows"
    " UNION ALL SELECT user_profile_id, message_id, flags FROM user_message_staged"
)


def _has_statistics() -> bool:
    found = op.get_bind().exec_driver_sql("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'")
    return found.first() is not None


def _rename_statistics(old: str, new: str) -> None:
    """Move ``old``'s planner statistics to ``new`` (a table keyed WITHOUT ROWID names
    its key's entry after itself)."""
    if (
        op.get_bind()
        .exec_driver_sql("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'")
        .first()
    ):
        op.execute(
            f"UPDATE sqlite_stat1 SET tbl = '{new}',"
            f" idx = CASE idx WHEN '{old}' THEN '{new}' ELSE idx END WHERE tbl = '{old}'"
        )


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("ALTER TABLE user_message RENAME TO user_message_rows")
    _rename_statistics("user_message", "user_message_rows")
    op.execute(
        "CREATE TABLE user_message_staged ("
        " message_id INTEGER NOT NULL,"
        " user_profile_id INTEGER NOT NULL,"
        " flags BIGINT DEFAULT '0' NOT NULL,"
        " CONSTRAINT pk_user_message_staged PRIMARY KEY (message_id, user_profile_id)"
        ") WITHOUT ROWID"
    )
    op.execute(
        "CREATE INDEX ix_user_message_staged_user"
        " ON user_message_staged (user_profile_id, message_id, flags)"
    )
    op.execute(_VIEW)
    if _has_statistics():
        # A few rows per user, whatever ANALYZE finds later (sqlite_staged.STAGED_STATISTICS).
        op.execute(
            "INSERT INTO sqlite_stat1 VALUES"
            " ('user_message_staged', 'user_message_staged', '2000 200 1'),"
            " ('user_message_staged', 'ix_user_message_staged_user', '2000 2 1 1')"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("DROP VIEW user_message")
    op.execute(
        "INSERT INTO user_message_rows (user_profile_id, message_id, flags)"
        " SELECT user_profile_id, message_id, flags FROM user_message_staged WHERE true"
        " ORDER BY user_profile_id, message_id"
        " ON CONFLICT (user_profile_id, message_id) DO UPDATE SET flags = excluded.flags"
    )
    op.execute("DROP TABLE user_message_staged")
    if _has_statistics():
        op.execute("DELETE FROM sqlite_stat1 WHERE tbl = 'user_message_staged'")
    op.execute("ALTER TABLE user_message_rows RENAME TO user_message")
    _rename_statistics("user_message_rows", "user_message")
