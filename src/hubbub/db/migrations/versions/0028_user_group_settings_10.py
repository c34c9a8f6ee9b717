"""user_group: creator, creation time, deactivation and group-valued settings (Zulip 10)

Zulip 10.0 gives each user group six group-valued permission settings
(``can_add_members_group``, ``can_join_group``, ``can_leave_group``, ``can_manage_group``,
``can_mention_group``, ``can_remove_members_group``), a creator and creation time
(feature level 292) and deactivation instead of deletion (feature level 290). The settings
live in one JSON text column, as the realm keeps its own in ``realm.settings``: each value
an integer group id or an anonymous group ``{"direct_members", "direct_subgroups"}``.

Existing groups keep what their users could do before: ``can_mention_group`` moves from
its column into the JSON; the direct members of a user-defined group could change it and
its members, so the group itself becomes its ``can_manage_group`` and
``can_add_members_group``; nobody may join it and anyone may leave it, as Zulip's defaults
say. System groups get Zulip's defaults for system groups (nobody, for every setting).
Creator and creation time stay null for existing groups, as Zulip shows them.

The ``can_mention_group_id`` column stays, always null: SQLite cannot drop a column that a
foreign key names without rebuilding the table, and rebuilding user_group would delete
the memberships that cascade from it.

Revision ID: 0028
Revises: 0027
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

_GROUP = sa.table(
    "user_group",
    sa.column("id", sa.Integer),
    sa.column("realm_id", sa.Integer),
    sa.column("name", sa.String),
    sa.column("is_system_group", sa.Boolean),
    sa.column("can_mention_group_id", sa.Integer),
    sa.column("settings", sa.Text),
)

_SETTINGS = (
    "can_add_members_group",
    "can_join_group",
    "can_leave_group",
    "can_manage_group",
    "can_mention_group",
    "can_remove_members_group",
)


def _system_ids(rows: list[Any]) -> dict[tuple[int, str], int]:
    return {(r.realm_id, r.name): r.id for r in rows if r.is_system_group}


def _fire_pending_triggers() -> None:
    """PostgreSQL refuses to ALTER a table with trigger events still pending in the
    transaction (migration 0018's people-version triggers are deferred to the commit):
    fire them now, then defer again."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute("SET CONSTRAINTS ALL IMMEDIATE")
        op.execute("SET CONSTRAINTS ALL DEFERRED")


def upgrade() -> None:
    _fire_pending_triggers()
    # Plain ADD COLUMN on both dialects: rebuilding user_group (SQLite's batch mode) would
    # drop it while memberships and channel settings refer to it.
    op.add_column("user_group", sa.Column("creator_id", sa.Integer(), nullable=True))
    op.add_column("user_group", sa.Column("date_created", sa.Double(), nullable=True))
    op.add_column(
        "user_group",
        sa.Column("deactivated", sa.Boolean(), server_default=sa.false(), nullable=False),
    )
    op.add_column(
        "user_group", sa.Column("settings", sa.Text(), server_default="{}", nullable=False)
    )
    conn = op.get_bind()
    rows = list(conn.execute(sa.select(_GROUP)))
    system = _system_ids(rows)
    for row in rows:
        nobody = system[(row.realm_id, "role:nobody")]
        if row.is_system_group:
            values: dict[str, Any] = {name: nobody for name in _SETTINGS}
        else:
            everyone = system[(row.realm_id, "role:everyone")]
            values = {
                "can_add_members_group": row.id,
                "can_join_group": nobody,
                "can_leave_group": everyone,
                "can_manage_group": row.id,
                "can_mention_group": row.can_mention_group_id or everyone,
                "can_remove_members_group": nobody,
            }
        conn.execute(
            sa.update(_GROUP)
            .where(_GROUP.c.id == row.id)
            .values(settings=json.dumps(values, sort_keys=True), can_mention_group_id=None)
        )


def downgrade() -> None:
    conn = op.get_bind()
    rows = list(conn.execute(sa.select(_GROUP)))
    system = _system_ids(rows)
    for row in rows:
        value = json.loads(row.settings or "{}").get("can_mention_group")
        if not isinstance(value, int):
            # Zulip 8.0 knew no anonymous groups: the widest group stands in.
            value = system[(row.realm_id, "role:everyone")]
        conn.execute(
            sa.update(_GROUP).where(_GROUP.c.id == row.id).values(can_mention_group_id=value)
        )
    _fire_pending_triggers()
    for column in ("settings", "deactivated", "date_created", "creator_id"):
        op.drop_column("user_group", column)
