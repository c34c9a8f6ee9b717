"""Changing organization settings; each change is a ``realm`` update event for everyone.

``PATCH /realm`` (the settings issue) validates values and calls ``do_set_realm_property``.
"""

from __future__ import annotations

from typing import Any

import orjson
import sqlalchemy as sa

from hubbub.db.tables import realm as realm_table
from hubbub.models import Realm
from hubbub.queries.realms import get_realm_by_id
from hubbub.queries.users import list_active_users
from hubbub.realm_settings import REALM_SETTING_DEFAULTS
from hubbub.transaction import Tx

# Settings stored in a column of their own rather than in ``realm.settings``.
COLUMN_SETTINGS = frozenset({"name", "enable_spectator_access"})


async def do_set_realm_property(tx: Tx, realm: Realm, name: str, value: Any) -> Realm:
    """Store one (already validated) setting and tell every active user."""
    if name in COLUMN_SETTINGS:
        values: dict[str, Any] = {name: value}
    elif name in REALM_SETTING_DEFAULTS:
        current = (
            await tx.conn.execute(
                sa.select(realm_table.c.settings).where(realm_table.c.id == realm.id)
            )
        ).scalar_one()
        settings = orjson.loads(current or "{}")
        if value == REALM_SETTING_DEFAULTS[name]:
            settings.pop(name, None)
        else:
            settings[name] = value
        values = {"settings": orjson.dumps(settings, option=orjson.OPT_SORT_KEYS).decode()}
    else:
        raise ValueError(f"unknown realm setting {name!r}")
    await tx.conn.execute(
        sa.update(realm_table).where(realm_table.c.id == realm.id).values(**values)
    )
    users = await list_active_users(tx.conn, realm.id)
    tx.notify(
        realm.id,
        {"type": "realm", "op": "update", "property": name, "value": value},
        [u.id for u in users],
    )
    updated = await get_realm_by_id(tx.conn, realm.id)
    assert updated is not None
    return updated
