"""realm_people_version counts the realm's user groups' changes too

``/register``'s ``realm_user_groups`` reads every group of the realm with its members,
thousands of membership rows in a big realm. With
changes of ``user_group``, ``user_group_membership`` and ``group_group_membership``
counted in the realm's people version (migration 0017), a process keeps the groups as
it keeps the users (``queries/people.PeopleCache``). A membership row names its group,
not its realm: its triggers look the realm up through the group. A membership deleted
with its group finds no group then, and counts nothing; the group's own deletion has
counted.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_UPSERT = " ON CONFLICT (realm_id) DO UPDATE SET version = realm_people_version.version + 1"
# The table, and the column naming the group whose realm counts a change of its rows.
_MEMBERSHIPS = {
    "user_group_membership": "user_group_id",
    "group_group_membership": "supergroup_id",
}
_EVENTS = {"insert": ("INSERT", "NEW"), "update": ("UPDATE", "NEW"), "delete": ("DELETE", "OLD")}


def _sqlite_triggers() -> dict[str, str]:
    """Trigger name -> its CREATE statement."""
    triggers = {}
    for kind, (event, row) in _EVENTS.items():
        triggers[f"user_group_people_{kind}"] = (
            f"CREATE TRIGGER user_group_people_{kind} AFTER {event} ON user_group BEGIN"
            f" INSERT INTO realm_people_version (realm_id, version) VALUES ({row}.realm_id, 1)"
            f"{_UPSERT}; END"
        )
        for table, column in _MEMBERSHIPS.items():
            # An INSERT ... SELECT with an upsert needs its WHERE clause (SQLite's parser).
            triggers[f"{table}_people_{kind}"] = (
                f"CREATE TRIGGER {table}_people_{kind} AFTER {event} ON {table} BEGIN"
                " INSERT INTO realm_people_version (realm_id, version)"
                f" SELECT realm_id, 1 FROM user_group WHERE id = {row}.{column}{_UPSERT}; END"
            )
    return triggers


# PostgreSQL: user_group uses migration 0017's function (it has a realm_id); the
# memberships one that finds the group named by the column its trigger passes. Deferred
# to the COMMIT, as 0017's.
_POSTGRESQL_UP = [
    "CREATE FUNCTION realm_people_version_bump_by_group() RETURNS trigger LANGUAGE plpgsql"
    " AS $$ BEGIN INSERT INTO realm_people_version (realm_id, version)"
    " SELECT realm_id, 1 FROM user_group WHERE id ="
    " (to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END) ->> TG_ARGV[0])::integer"
    f"{_UPSERT}; RETURN NULL; END $$",
    "CREATE CONSTRAINT TRIGGER user_group_people AFTER INSERT OR UPDATE OR DELETE"
    " ON user_group DEFERRABLE INITIALLY DEFERRED"
    " FOR EACH ROW EXECUTE FUNCTION realm_people_version_bump()",
    *(
        f"CREATE CONSTRAINT TRIGGER {table}_people AFTER INSERT OR UPDATE OR DELETE"
        f" ON {table} DEFERRABLE INITIALLY DEFERRED"
        f" FOR EACH ROW EXECUTE FUNCTION realm_people_version_bump_by_group('{column}')"
        for table, column in _MEMBERSHIPS.items()
    ),
]
_POSTGRESQL_DOWN = [
    *(f"DROP TRIGGER IF EXISTS {table}_people ON {table}" for table in _MEMBERSHIPS),
    "DROP TRIGGER IF EXISTS user_group_people ON user_group",
    "DROP FUNCTION IF EXISTS realm_people_version_bump_by_group()",
]


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        statements = list(_sqlite_triggers().values())
    else:
        statements = _POSTGRESQL_UP
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        statements = [f"DROP TRIGGER IF EXISTS {name}" for name in _sqlite_triggers()]
    else:
        statements = _POSTGRESQL_DOWN
    for statement in statements:
        op.execute(statement)
