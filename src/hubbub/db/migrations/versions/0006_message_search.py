"""message full-text search

SQLite: an FTS5 external-content table over message topic and content, kept current by
triggers. PostgreSQL: a generated tsvector column with a GIN index. Neither is in
``tables.py`` (they are dialect-specific); tests/test_migrations.py skips them.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

SQLITE_UP = [
    "CREATE VIRTUAL TABLE message_fts USING fts5(topic, content, content='message',"
    " content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER message_fts_insert AFTER INSERT ON message BEGIN"
    " INSERT INTO message_fts(rowid, topic, content) VALUES (new.id, new.topic, new.content);"
    " END",
    "CREATE TRIGGER message_fts_delete AFTER DELETE ON message BEGIN"
    " INSERT INTO message_fts(message_fts, rowid, topic, content)"
    " VALUES ('delete', old.id, old.topic, old.content); END",
    "CREATE TRIGGER message_fts_update AFTER UPDATE OF topic, content ON message BEGIN"
    " INSERT INTO message_fts(message_fts, rowid, topic, content)"
    " VALUES ('delete', old.id, old.topic, old.content);"
    " INSERT INTO message_fts(rowid, topic, content) VALUES (new.id, new.topic, new.content);"
    " END",
    "INSERT INTO message_fts(message_fts) VALUES ('rebuild')",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS message_fts_update",
    "DROP TRIGGER IF EXISTS message_fts_delete",
    "DROP TRIGGER IF EXISTS message_fts_insert",
    "DROP TABLE IF EXISTS message_fts",
]
POSTGRESQL_UP = [
    "ALTER TABLE message ADD COLUMN search_tsvector tsvector GENERATED ALWAYS AS"
    " (to_tsvector('english'::regconfig, topic || ' ' || content)) STORED",
    "CREATE INDEX ix_message_search_tsvector ON message USING gin (search_tsvector)",
]
POSTGRESQL_DOWN = [
    "DROP INDEX IF EXISTS ix_message_search_tsvector",
    "ALTER TABLE message DROP COLUMN IF EXISTS search_tsvector",
]


def _run(statements: dict[str, list[str]]) -> None:
    for statement in statements.get(op.get_bind().dialect.name, []):
        op.execute(statement)


def upgrade() -> None:
    _run({"sqlite": SQLITE_UP, "postgresql": POSTGRESQL_UP})


def downgrade() -> None:
    _run({"sqlite": SQLITE_DOWN, "postgresql": POSTGRESQL_DOWN})
