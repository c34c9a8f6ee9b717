"""user_message on SQLite: one B-tree keyed by (user, message), no unread index

A rowid table with a two-column primary key is two B-trees: the rows in rowid order and
the key's index. A send to 1,000 subscribers appended 1,000 rows to the first (a few
pages) and wrote one entry into each recipient's own leaf of the key's index and of the
partial unread index: ~2,000 leaves and their parents, each a whole page in the WAL.
Keyed by its primary key (WITHOUT ROWID), the table holds each row, flags included, in
the key's own B-tree, so a user's rows and flags are one range of it and the unread
index adds nothing a scan of that range cannot answer. A big send then writes half the
pages it did, and reading a user's unread rows by scanning their range costs a little
more than the unread index did (``bench/user_message_layout.py``;
bench/results/sqlite-user-message.md).

PostgreSQL keeps its heap, key and unread index: nothing changes there.

The rebuild copies every row once; the time it took on the full-scale benchmark realm is
in bench/results/sqlite-user-message.md.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_COLUMNS = """(
    user_profile_id INTEGER NOT NULL,
    message_id INTEGER NOT NULL,
    flags BIGINT DEFAULT '0' NOT NULL,
    CONSTRAINT pk_user_message PRIMARY KEY (user_profile_id, message_id),
    CONSTRAINT fk_user_message_user_profile_id_user_profile FOREIGN KEY(user_profile_id)
        REFERENCES user_profile (id) ON DELETE CASCADE,
    CONSTRAINT fk_user_message_message_id_message FOREIGN KEY(message_id)
        REFERENCES message (id) ON DELETE CASCADE
)"""

_INDEXES = {
    "ix_user_message_message_id": "(message_id)",
    "ix_user_message_starred": "(user_profile_id, message_id) WHERE (flags & 2) != 0",
    "ix_user_message_private": "(user_profile_id, message_id) WHERE (flags & 2048) != 0",
}
_UNREAD = "(user_profile_id, message_id, flags) WHERE (flags & 1) = 0"


def _rebuild(table_options: str, indexes: dict[str, str]) -> None:
    """Copy user_message into a table made with ``table_options``, then index it."""
    op.execute(f"CREATE TABLE user_message_new {_COLUMNS}{table_options}")
    # In key order: each row is appended to the new B-tree's last leaf.
    op.execute(
        "INSERT INTO user_message_new (user_profile_id, message_id, flags)"
        " SELECT user_profile_id, message_id, flags FROM user_message"
        " ORDER BY user_profile_id, message_id"
    )
    op.execute("DROP TABLE user_message")
    op.execute("ALTER TABLE user_message_new RENAME TO user_message")
    for name, columns in indexes.items():
        op.execute(f"CREATE INDEX {name} ON user_message {columns}")


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    _rebuild(" WITHOUT ROWID", _INDEXES)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    _rebuild("", {**_INDEXES, "ix_user_message_unread": _UNREAD})
