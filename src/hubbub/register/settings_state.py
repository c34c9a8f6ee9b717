"""/register state for user_settings, realm_user_settings_defaults, drafts, legacy settings.

What Zulip 10.2 sends:
- ``user_settings`` (fetch type ``user_settings``): every setting, plus ``emojiset_choices``
  and ``available_notification_sounds``;
- for clients without the ``user_settings_object`` capability, the settings older than
  feature level 89 also at the top level (without ``dense_mode``, removed at feature
  level 364): the display ones (with ``timezone`` and
  ``emojiset_choices``) for fetch type ``update_display_settings``, the notification ones
  (with ``available_notification_sounds``) for ``update_global_notifications``;
- ``realm_user_settings_defaults`` and ``drafts`` (the 1,000 most recently edited).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.queries.drafts import MAX_DRAFTS_IN_REGISTER_RESPONSE, draft_order_key, list_drafts
from hubbub.queries.user_dicts import DUMMY_EMAIL_DOMAIN
from hubbub.queries.user_settings import get_realm_user_defaults, get_user_settings
from hubbub.register.context import StateContext
from hubbub.user_settings import (
    DISPLAY_SETTINGS_LEGACY,
    EMOJISET_CHOICES,
    NOTIFICATION_SETTINGS_LEGACY,
    NOTIFICATION_SOUNDS,
)


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    state: dict[str, Any] = {}
    legacy = not ctx.client_capabilities.get("user_settings_object", False)
    want_display = legacy and ctx.wanted("update_display_settings")
    want_notifications = legacy and ctx.wanted("update_global_notifications")
    if ctx.wanted("user_settings") or want_display or want_notifications:
        settings = await get_user_settings(conn, ctx.me.id)
        if ctx.wanted("user_settings"):
            state["user_settings"] = {**settings, **_copy_choices()}
        if want_display:
            state.update({name: settings[name] for name in DISPLAY_SETTINGS_LEGACY})
            state["timezone"] = settings["timezone"]
            state["emojiset_choices"] = [dict(c) for c in EMOJISET_CHOICES]
        if want_notifications:
            state.update({name: settings[name] for name in NOTIFICATION_SETTINGS_LEGACY})
            state["available_notification_sounds"] = list(NOTIFICATION_SOUNDS)
    if ctx.wanted("realm_user_settings_defaults"):
        defaults = await get_realm_user_defaults(conn, ctx.realm.id)
        state["realm_user_settings_defaults"] = {**defaults, **_copy_choices()}
    if ctx.wanted("drafts"):
        state["drafts"] = await list_drafts(conn, ctx.me.id, MAX_DRAFTS_IN_REGISTER_RESPONSE)
    return state


def _copy_choices() -> dict[str, Any]:
    return {
        "emojiset_choices": [dict(c) for c in EMOJISET_CHOICES],
        "available_notification_sounds": list(NOTIFICATION_SOUNDS),
    }


def _drafts_sync_turned_off(state: dict[str, Any], name: str, value: Any) -> None:
    # Zulip deletes the stored drafts without ``drafts`` events; a fresh /register then
    # returns none, so a client forgets its synced copies here too.
    if name == "enable_drafts_synchronization" and value is False and "drafts" in state:
        state["drafts"] = []


def _apply_drafts(state: dict[str, Any], event: dict[str, Any]) -> None:
    if "drafts" not in state:
        return
    drafts: list[dict[str, Any]] = state["drafts"]
    if event["op"] == "add":
        drafts.extend(event["drafts"])
    elif event["op"] == "update":
        drafts[:] = [d for d in drafts if d["id"] != event["draft"]["id"]]
        drafts.append(event["draft"])
    elif event["op"] == "remove":
        drafts[:] = [d for d in drafts if d["id"] != event["draft_id"]]
    drafts.sort(key=draft_order_key)


# The dummy API emails of users who hide their address end with this.
_DUMMY_EMAIL_SUFFIX = "@" + DUMMY_EMAIL_DOMAIN


def _apply_email_or_avatar(state: dict[str, Any], person: dict[str, Any]) -> None:
    """``realm_user`` updates for a new API email or avatar (sent when a user changes
    ``email_address_visibility``): update the fields a client keeps, as Zulip's client
    does, rather than copying the event's keys into the person."""
    user_id = person["user_id"]
    if "new_email" in person and state.get("user_id") == user_id:
        state["email"] = person["new_email"]
    people = state.get("realm_users", []) + state.get("realm_non_active_users", [])
    # A client registered with client_gravatar holds null for the Gravatars it computes,
    # and nulls the URL of an avatar event itself when it can compute that one (a
    # Gravatar of a user whose email everyone sees), as Zulip's client does.
    computes_gravatars = any(p["avatar_url"] is None for p in people)
    for target in people:
        if target["user_id"] != user_id:
            continue
        if "new_email" in person:
            target["email"] = person["new_email"]
        if "avatar_source" in person:
            computable = person["avatar_source"] == "G" and not target["email"].endswith(
                _DUMMY_EMAIL_SUFFIX
            )
            target["avatar_url"] = (
                None if computes_gravatars and computable else person["avatar_url"]
            )
            target["avatar_version"] = person["avatar_version"]


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    """Apply one event; False when it is not one of this part's event types."""
    kind = event["type"]
    if kind == "user_settings":
        if "user_settings" in state:
            state["user_settings"][event["property"]] = event["value"]
        _drafts_sync_turned_off(state, event["property"], event["value"])
    elif kind == "update_display_settings":
        if event["setting_name"] in state:
            state[event["setting_name"]] = event["setting"]
        _drafts_sync_turned_off(state, event["setting_name"], event["setting"])
    elif kind == "update_global_notifications":
        if event["notification_name"] in state:
            state[event["notification_name"]] = event["setting"]
    elif kind == "realm_user_settings_defaults":
        if "realm_user_settings_defaults" in state:
            state["realm_user_settings_defaults"][event["property"]] = event["value"]
    elif kind == "drafts":
        _apply_drafts(state, event)
    elif (
        kind == "realm_user"
        and event["op"] == "update"
        and ("new_email" in event["person"] or "avatar_source" in event["person"])
    ):
        if "realm_users" in state:
            _apply_email_or_avatar(state, event["person"])
    else:
        return False
    return True
