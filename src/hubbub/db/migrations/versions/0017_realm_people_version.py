"""realm_people_version: a count of each realm's user_profile changes, kept by triggers

``/register`` reads every account of the realm, a large part of its time on the event
loop in a big realm (bench/results/caches.md). A process now keeps each realm's users as it last
read them, with this count; one read of the count, in the same transaction, says
whether they are still current. Triggers keep the count, so that no write of
user_profile (the server's, a command's, another worker's) can forget it: on SQLite one
per statement kind, on PostgreSQL one function for all three, run at the COMMIT.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

# The row already there is named by its table: SQLite takes no alias in a trigger's
# INSERT, and both read the qualified name alike.
_BUMP = (
    "INSERT INTO realm_people_version (realm_id, version) VALUES ({realm}, 1)"
    " ON CONFLICT (realm_id) DO UPDATE SET version = realm_people_version.version + 1"
)
_SQLITE_TRIGGERS = {
    "user_profile_people_insert": ("INSERT", "NEW"),
    "user_profile_people_update": ("UPDATE", "NEW"),
    "user_profile_people_delete": ("DELETE", "OLD"),
}
_POSTGRESQL_UP = [
    "CREATE FUNCTION realm_people_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN "
    + _BUMP.format(realm="CASE WHEN TG_OP = 'DELETE' THEN OLD.realm_id ELSE NEW.realm_id END")
    + "; RETURN NULL; END $$",
    # Deferred to the COMMIT: the count's row is locked last, after every user row the
    # transaction changes, so two transactions changing users of one realm in crossing
    # orders cannot deadlock on it.
    "CREATE CONSTRAINT TRIGGER user_profile_people AFTER INSERT OR UPDATE OR DELETE"
    " ON user_profile DEFERRABLE INITIALLY DEFERRED"
    " FOR EACH ROW EXECUTE FUNCTION realm_people_version_bump()",
]
_POSTGRESQL_DOWN = [
    "DROP TRIGGER IF EXISTS user_profile_people ON user_profile",
    "DROP FUNCTION IF EXISTS realm_people_version_bump()",
]


def upgrade() -> None:
    op.create_table(
        "realm_people_version",
        sa.Column("realm_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("version", sa.BigInteger, nullable=False, server_default="0"),
    )
    if op.get_bind().dialect.name == "sqlite":
        for name, (event, row) in _SQLITE_TRIGGERS.items():
            op.execute(
                f"CREATE TRIGGER {name} AFTER {event} ON user_profile BEGIN "
                + _BUMP.format(realm=f"{row}.realm_id")
                + "; END"
            )
    else:
        for statement in _POSTGRESQL_UP:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in _SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    else:
        for statement in _POSTGRESQL_DOWN:
            op.execute(statement)
    op.drop_table("realm_people_version")
