"""Changing a user's settings, password and the realm's defaults for new users' settings.

Behaviour follows Zulip 10.2:
- every changed setting sends the user a ``user_settings`` update; settings that existed
  before feature level 89 also send the legacy ``update_display_settings`` or
  ``update_global_notifications`` event (the queues of clients with the
  ``user_settings_object`` capability drop those);
- a time zone change tells everyone (``realm_user`` update with ``timezone``);
- an ``email_address_visibility`` change tells each viewer whose access to the real email
  changed (``delivery_email``), and, when the API email changes (visibility to or from
  "everyone"), everyone hears of the new ``email`` and of the avatar URL that goes with it;
- turning ``enable_drafts_synchronization`` off deletes the user's stored drafts without
  ``drafts`` events (clients keep their local copies);
- an ``allow_private_data_export`` change tells the realm's human administrators and
  owners (``realm_export_consent``, feature level 312), who may list the consents;
- realm defaults apply to users created later, never to existing users.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import orjson
import sqlalchemy as sa

from hubbub.actions.user_events import notify_user_updated
from hubbub.credentials import hash_password
from hubbub.db.dialects import for_name
from hubbub.db.tables import draft, realm, realm_user_default, user_profile, user_setting
from hubbub.models import Realm, User
from hubbub.queries.user_dicts import (
    GRAVATAR_URL,
    api_email,
    avatar_url,
    can_access_delivery_email,
)
from hubbub.queries.user_settings import (
    get_stored_realm_user_defaults,
    get_stored_user_settings,
)
from hubbub.queries.users import active_user_ids, get_user_by_id, list_active_users
from hubbub.transaction import Tx
from hubbub.user_settings import (
    COLUMN_SETTINGS,
    DISPLAY_SETTINGS_LEGACY,
    NOT_REALM_DEFAULTS,
    NOTIFICATION_SETTINGS_LEGACY,
    USER_SETTING_DEFAULTS,
    language_name,
    overrides,
)


async def _store(tx: Tx, table: sa.Table, key: str, key_value: int, values: dict[str, Any]) -> None:
    """Upsert the JSON of ``values`` that differ from Zulip's defaults."""
    text = orjson.dumps(overrides(values)).decode()
    statement = (
        for_name(tx.conn.dialect.name).insert(table).values({key: key_value, "settings": text})
    )
    await tx.conn.execute(
        statement.on_conflict_do_update(index_elements=[key], set_={"settings": text})
    )


async def do_copy_realm_user_defaults(tx: Tx, realm_obj: Realm, user_id: int) -> None:
    """A new user's settings: the realm's defaults, and the realm's language.

    ``email_address_visibility`` is set by user creation itself (from the realm column);
    the login and marketing email settings keep Zulip's defaults, as in Zulip."""
    stored = await get_stored_realm_user_defaults(tx.conn, realm_obj.id)
    values = {k: v for k, v in stored.items() if k not in NOT_REALM_DEFAULTS}
    values.pop("email_address_visibility", None)
    values["default_language"] = realm_obj.setting("default_language")
    if overrides(values):
        await _store(tx, user_setting, "user_profile_id", user_id, values)


def _legacy_events(user: User, name: str, value: Any) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    if name in NOTIFICATION_SETTINGS_LEGACY:
        events.append(
            {
                "type": "update_global_notifications",
                "user": user.email,
                "notification_name": name,
                "setting": value,
            }
        )
    if name in DISPLAY_SETTINGS_LEGACY or name == "timezone":
        event = {
            "type": "update_display_settings",
            "user": user.email,
            "setting_name": name,
            "setting": value,
        }
        if name == "default_language":
            event["language_name"] = language_name(value)
        events.append(event)
    return events


async def do_change_user_settings(tx: Tx, user: User, changes: dict[str, Any]) -> User:
    """Store ``changes`` (already validated, only values that differ) and queue the events,
    setting by setting in the order given. Returns the user as it is afterwards."""
    if not changes:
        return user
    stored = await get_stored_user_settings(tx.conn, user.id)
    json_changed = False
    for name, value in changes.items():
        event: dict[str, Any] = {
            "type": "user_settings",
            "op": "update",
            "property": name,
            "value": value,
        }
        if name == "default_language":
            event["language_name"] = language_name(value)
        tx.notify(user.realm_id, event, [user.id])
        for legacy in _legacy_events(user, name, value):
            tx.notify(user.realm_id, legacy, [user.id])
        if name == "email_address_visibility":
            user = await _change_email_visibility(tx, user, value)
        elif name == "timezone":
            await tx.conn.execute(
                sa.update(user_profile).where(user_profile.c.id == user.id).values(timezone=value)
            )
            await notify_user_updated(tx, user, email=user.email, timezone=value)
        else:
            stored[name] = value
            json_changed = True
        if name == "enable_drafts_synchronization" and value is False:
            await tx.conn.execute(sa.delete(draft).where(draft.c.user_profile_id == user.id))
        if name == "allow_private_data_export":
            await _notify_export_consent(tx, user, bool(value))
    if json_changed:
        values = {k: v for k, v in stored.items() if k not in COLUMN_SETTINGS}
        await _store(tx, user_setting, "user_profile_id", user.id, values)
    return user


async def _notify_export_consent(tx: Tx, user: User, consented: bool) -> None:
    admins = [
        u.id
        for u in await list_active_users(tx.conn, user.realm_id)
        if u.is_realm_admin and not u.is_bot
    ]
    if admins:
        event = {"type": "realm_export_consent", "user_id": user.id, "consented": consented}
        tx.notify(user.realm_id, event, admins)


async def _change_email_visibility(tx: Tx, user: User, visibility: int) -> User:

    new_email = api_email(user.id, user.delivery_email, visibility)
    await tx.conn.execute(
        sa.update(user_profile)
        .where(user_profile.c.id == user.id)
        .values(email_address_visibility=visibility, email=new_email)
    )
    if new_email != user.email:
        # The old address no longer logs in (auth accepts the API or the real email).
        tx.forget_credentials([user.id])
    after = await get_user_by_id(tx.conn, user.realm_id, user.id)
    assert after is not None
    # Viewers who gain or lose access to the real address hear of it.
    gained: list[int] = []
    lost: list[int] = []
    for viewer in await list_active_users(tx.conn, user.realm_id):
        before_ok = can_access_delivery_email(viewer, user)
        after_ok = can_access_delivery_email(viewer, after)
        if after_ok and not before_ok:
            gained.append(viewer.id)
        elif before_ok and not after_ok:
            lost.append(viewer.id)
    for user_ids, address in ((gained, user.delivery_email), (lost, None)):
        if user_ids:
            person = {"user_id": user.id, "delivery_email": address}
            tx.notify(
                user.realm_id, {"type": "realm_user", "op": "update", "person": person}, user_ids
            )
    if new_email != user.email:
        await notify_user_updated(tx, after, new_email=new_email)
        # A Gravatar computed by the client needs a visible email, so the avatar of
        # clients with client_gravatar changes too; the event carries the URL, as Zulip's,
        # and those clients null it themselves.
        digest = hashlib.md5(after.delivery_email.lower().encode(), usedforsecurity=False)
        medium = GRAVATAR_URL.format(hash=digest.hexdigest(), version=after.avatar_version)
        await notify_user_updated(
            tx,
            after,
            avatar_source=after.avatar_source,
            avatar_url=avatar_url(after, client_gravatar=False),
            avatar_url_medium=medium.replace("&version=", "&s=500&version="),
            avatar_version=after.avatar_version,
        )
    return after


async def do_change_password(tx: Tx, user: User, new_password: str) -> None:
    # Argon2 is deliberately slow; keep it off the event loop.
    hashed = await asyncio.to_thread(hash_password, new_password)
    await tx.conn.execute(
        sa.update(user_profile).where(user_profile.c.id == user.id).values(password_hash=hashed)
    )


async def do_set_realm_user_defaults(tx: Tx, realm_id: int, changes: dict[str, Any]) -> None:
    """Store the realm's new defaults and tell every active user of the realm, one
    ``realm_user_settings_defaults`` event per changed setting."""
    if not changes:
        return
    stored = await get_stored_realm_user_defaults(tx.conn, realm_id)
    json_changed = False
    for name, value in changes.items():
        if name == "email_address_visibility":
            await tx.conn.execute(
                sa.update(realm)
                .where(realm.c.id == realm_id)
                .values(default_email_address_visibility=value)
            )
        else:
            stored[name] = value
            json_changed = True
    if json_changed:
        values = {k: v for k, v in stored.items() if k in USER_SETTING_DEFAULTS}
        await _store(tx, realm_user_default, "realm_id", realm_id, values)
    recipients = await active_user_ids(tx.conn, realm_id)
    for name, value in changes.items():
        tx.notify(
            realm_id,
            {
                "type": "realm_user_settings_defaults",
                "op": "update",
                "property": name,
                "value": value,
            },
            recipients,
        )
