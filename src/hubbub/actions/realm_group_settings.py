"""Changing the organization's group-valued permission settings (``PATCH /realm``).

Each setting arrives as ``{"new": value, "old": value}`` (``old`` optional; feature levels
264 onwards) and is handled as Zulip 10.2's ``update_realm`` does:
- ``new`` and ``old`` are read as group-setting values; an anonymous group of one subgroup
  and no members stands for that subgroup;
- a given ``old`` that differs from the current value refuses the request ("'old' value
  does not match the expected value."), which protects a client that showed stale state;
- a ``new`` equal to the current value changes nothing and sends nothing;
- a group id must name a group of the realm that the setting's configuration allows, and
  an anonymous group must name active users and groups of the realm;
- each change is one ``realm``/``update_dict`` event (``property: "default"``) to every
  active user, after the commit.
Every setting of the request is checked before any is stored.
"""

from __future__ import annotations

from typing import Any

import orjson
import sqlalchemy as sa

from hubbub.actions.group_setting_values import (
    check_group_setting_value,
    parse_group_setting_value,
)
from hubbub.db.tables import realm as realm_table
from hubbub.errors import JsonableError, OrganizationOwnerRequiredError
from hubbub.models import Realm, User
from hubbub.queries.group_settings import get_group_setting_values
from hubbub.queries.users import active_user_ids
from hubbub.realm_group_settings import (
    OWNER_ONLY_GROUP_SETTINGS,
    REALM_PERMISSION_GROUP_SETTINGS,
    GroupSettingValue,
    group_setting_values_equal,
)
from hubbub.transaction import Tx


async def check_realm_group_setting_changes(
    tx: Tx, realm: Realm, user: User, requested: dict[str, dict[str, Any]]
) -> list[tuple[str, GroupSettingValue]]:
    """Validate the group settings of a ``PATCH /realm`` (name -> ``{new, old}``); the
    changes to make, in Zulip's order. Raises before anything is stored."""
    if not user.is_owner and OWNER_ONLY_GROUP_SETTINGS & requested.keys():
        raise OrganizationOwnerRequiredError()
    names = [name for name in REALM_PERMISSION_GROUP_SETTINGS if name in requested]
    if not names:
        return []
    current = await get_group_setting_values(tx.conn, realm, names)
    changes: list[tuple[str, GroupSettingValue]] = []
    for name in names:
        new = parse_group_setting_value(requested[name].get("new"))
        assert new is not None
        old = parse_group_setting_value(requested[name].get("old"))
        if old is not None and not group_setting_values_equal(old, current[name]):
            raise JsonableError("'old' value does not match the expected value.")
        if group_setting_values_equal(new, current[name]):
            continue
        await check_group_setting_value(tx, realm, name, REALM_PERMISSION_GROUP_SETTINGS[name], new)
        changes.append((name, new))
    return changes


async def do_set_realm_group_settings(
    tx: Tx, realm: Realm, changes: list[tuple[str, GroupSettingValue]]
) -> None:
    """Store checked values in the realm's settings JSON, then tell every active user.

    A value is stored even when it is the setting's default group, so that it stays
    explicit (a Zulip 8.0 policy still in the settings never shadows it)."""
    if not changes:
        return
    raw = (
        await tx.conn.execute(sa.select(realm_table.c.settings).where(realm_table.c.id == realm.id))
    ).scalar_one()
    settings = orjson.loads(raw or "{}")
    for name, value in changes:
        settings[name] = value
    await tx.conn.execute(
        sa.update(realm_table)
        .where(realm_table.c.id == realm.id)
        .values(settings=orjson.dumps(settings, option=orjson.OPT_SORT_KEYS).decode())
    )
    recipients = await active_user_ids(tx.conn, realm.id)
    for name, value in changes:
        tx.notify(realm.id, realm_group_setting_event(name, value), recipients)


def realm_group_setting_event(name: str, value: GroupSettingValue) -> dict[str, Any]:
    return {"type": "realm", "op": "update_dict", "property": "default", "data": {name: value}}


async def notify_group_settings_of_user(tx: Tx, realm: Realm, user_id: int) -> None:
    """After ``user_id`` is deactivated or reactivated: the settings whose anonymous group
    names them directly change their API value (deactivated users are left out since
    feature level 303), so each such setting's new value goes to every active user."""
    values = await get_group_setting_values(tx.conn, realm)
    recipients = await active_user_ids(tx.conn, realm.id)
    for name, value in values.items():
        stored = realm.settings.get(name)
        if isinstance(stored, dict) and user_id in stored["direct_members"]:
            tx.notify(realm.id, realm_group_setting_event(name, value), recipients)
