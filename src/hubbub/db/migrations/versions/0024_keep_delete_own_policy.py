"""Organizations created before Zulip 10's permission groups keep who may delete their own
messages

Zulip 8.0's default let administrators only delete their own messages
(``delete_own_message_policy`` 2); Zulip 10's ``can_delete_own_message_group`` defaults to
everyone. hubbub stored only settings that differ from their defaults, so an
organization that kept the 8.0 default would silently widen the permission on upgrade.
Writing the old default explicitly keeps it: the group setting reads a stored 8.0 policy
until the setting is changed. Every other replaced policy had the default its group
setting has now.

Revision ID: 0024
Revises: 0023
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

_REALM = sa.table("realm", sa.column("id", sa.Integer), sa.column("settings", sa.Text))


def upgrade() -> None:
    bind = op.get_bind()
    for realm_id, text in bind.execute(sa.select(_REALM.c.id, _REALM.c.settings)).all():
        settings = json.loads(text or "{}")
        if "delete_own_message_policy" in settings or "can_delete_own_message_group" in settings:
            continue
        settings["delete_own_message_policy"] = 2
        bind.execute(
            sa.update(_REALM).where(_REALM.c.id == realm_id).values(settings=json.dumps(settings))
        )


def downgrade() -> None:
    # The stored value is what Zulip 8.0's default was, so it can stay.
    pass
