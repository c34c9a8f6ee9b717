"""Alembic environment: runs on the connection that ``hubbub.db.migrate`` hands over."""

from __future__ import annotations

from alembic import context

from hubbub.db.tables import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    # SQLite cannot ALTER most things in place; batch mode rebuilds the table instead.
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
