"""Changing organization settings (``PATCH /realm``) and the ``realm`` events that follow.

Behaviour follows Zulip 8.0's ``update_realm``:
- every value is validated before anything is stored, so a request succeeds or fails whole;
- a setting given its current value is not stored again and sends no event;
- each changed setting is one event to every active user: ``realm``/``update``, or
  ``update_dict`` for the message-editing settings (see ``UPDATE_DICT_SETTINGS``);
- the response names each changed setting: its new value, or ``"updated"`` for strings.
"""

from __future__ import annotations

import contextlib
from typing import Any

import orjson
import sqlalchemy as sa

from hubbub.actions.realm_group_settings import (
    check_realm_group_setting_changes,
    do_set_realm_group_settings,
)
from hubbub.actions.realms import check_realm_name
from hubbub.actions.streams import parse_message_retention_days
from hubbub.db.tables import realm as realm_table
from hubbub.errors import (
    JsonableError,
    OrganizationAdminRequiredError,
    OrganizationOwnerRequiredError,
)
from hubbub.json_values import load_json
from hubbub.models import Realm, User
from hubbub.queries.realms import get_realm_by_id
from hubbub.queries.users import list_active_users
from hubbub.realm_group_settings import REALM_PERMISSION_GROUP_SETTINGS
from hubbub.realm_settings import (
    EDIT_HISTORY_POLICIES,
    GIPHY_RATING_IDS,
    LANGUAGE_CODES,
    LEGACY_SETTING_KEYS,
    MAX_JITSI_SERVER_URL_LENGTH,
    OWNER_ONLY_SETTINGS,
    REALM_SETTING_DEFAULTS,
    TIME_LIMIT_SETTINGS,
    UPDATE_DICT_SETTINGS,
    VIDEO_CHAT_PROVIDER_IDS,
    message_edit_history_policy,
)
from hubbub.transaction import Tx

# Settings stored in a column of their own rather than in ``realm.settings``.
COLUMN_SETTINGS = frozenset({"name", "description", "enable_spectator_access"})


def realm_property(realm: Realm, name: str) -> Any:
    if name in COLUMN_SETTINGS:
        return getattr(realm, name)
    if name == "message_edit_history_visibility_policy":
        return message_edit_history_policy(realm)
    return realm.setting(name)


def realm_property_event(name: str, value: Any) -> dict[str, Any]:
    if name in UPDATE_DICT_SETTINGS:
        return {"type": "realm", "op": "update_dict", "property": "default", "data": {name: value}}
    return {"type": "realm", "op": "update", "property": name, "value": value}


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
        for legacy in LEGACY_SETTING_KEYS.get(name, ()):
            settings.pop(legacy, None)
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
    tx.notify(realm.id, realm_property_event(name, value), [u.id for u in users])
    updated = await get_realm_by_id(tx.conn, realm.id)
    assert updated is not None
    return updated


def _parse_time_limit(name: str, raw: str) -> int | None:
    """A positive number of seconds, or "unlimited" (None), as Zulip 8.0's
    parse_message_time_limit_setting; JSON text or a bare word."""
    value: Any = raw
    with contextlib.suppress(orjson.JSONDecodeError):
        value = load_json(name, raw)
    if value == "unlimited":
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise JsonableError(f"Bad value for '{name}': {value}")
    return value


def _parse_jitsi_server_url(raw: str) -> str | None:
    # Zulip reads it as JSON text; a bare string is accepted too.
    value: Any = raw
    if raw.startswith('"'):
        try:
            value = load_json("jitsi_server_url", raw)
        except orjson.JSONDecodeError:
            raise JsonableError("jitsi_server_url is not valid JSON") from None
    if value == "default":
        return None
    if (
        not isinstance(value, str)
        or len(value) > MAX_JITSI_SERVER_URL_LENGTH
        or not value.startswith(("http://", "https://"))
        or len(value.split("://", 1)[1]) == 0
    ):
        raise JsonableError("jitsi_server_url is not an allowed_type")
    return value


def _validate(user: User, requested: dict[str, Any]) -> dict[str, Any]:
    """Check permissions and values beyond their types; return the values to store."""
    if not user.is_owner and OWNER_ONLY_SETTINGS & requested.keys():
        raise OrganizationOwnerRequiredError()
    values = dict(requested)
    if "name" in values:
        values["name"] = check_realm_name(values["name"])
    language = values.get("default_language")
    if language is not None and language not in LANGUAGE_CODES:
        raise JsonableError(f"Invalid language '{language}'")
    provider = values.get("video_chat_provider")
    if provider is not None and provider not in VIDEO_CHAT_PROVIDER_IDS:
        raise JsonableError(f"Invalid video_chat_provider {provider}")
    policy = values.get("message_edit_history_visibility_policy")
    if policy is not None and policy not in EDIT_HISTORY_POLICIES:
        raise JsonableError("Invalid message_edit_history_visibility_policy")
    rating = values.get("giphy_rating")
    if rating is not None and rating not in GIPHY_RATING_IDS:
        raise JsonableError(f"Invalid giphy_rating {rating}")
    if "message_retention_days" in values:
        days = parse_message_retention_days(values["message_retention_days"], user)
        if days is None:  # "realm_default" only makes sense for a stream.
            raise JsonableError("Bad value for 'message_retention_days': realm_default")
        values["message_retention_days"] = days
    for name in TIME_LIMIT_SETTINGS:
        if name in values:
            values[name] = _parse_time_limit(name, values[name])
    if "jitsi_server_url" in values:
        values["jitsi_server_url"] = _parse_jitsi_server_url(values["jitsi_server_url"])
    return values


async def check_update_realm(
    tx: Tx, realm: Realm, user: User, requested: dict[str, Any]
) -> dict[str, Any]:
    """``PATCH /realm``: ``requested`` holds the settings the client sent (typed, not yet
    range-checked). Returns the response data: each changed setting and its new value."""
    if not user.is_realm_admin:
        raise OrganizationAdminRequiredError()
    groups = {k: v for k, v in requested.items() if k in REALM_PERMISSION_GROUP_SETTINGS}
    values = _validate(user, {k: v for k, v in requested.items() if k not in groups})
    # Read the realm inside the write, so two requests in a row see each other's changes.
    current = await get_realm_by_id(tx.conn, realm.id)
    assert current is not None
    # The group settings too are checked before anything is stored, and applied after the
    # others, as Zulip 10.2 does.
    group_changes = await check_realm_group_setting_changes(tx, current, user, groups)
    data: dict[str, Any] = {}
    for name, value in values.items():
        if realm_property(current, name) == value:
            continue
        current = await do_set_realm_property(tx, current, name, value)
        data[name] = "updated" if isinstance(value, str) else value
    await do_set_realm_group_settings(tx, current, group_changes)
    data.update(group_changes)
    return data
