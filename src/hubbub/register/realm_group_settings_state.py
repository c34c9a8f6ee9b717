"""/register state of the organization's group-valued permission settings, and how events
update it (Zulip 10.2, feature level 372).

With ``realm``: ``realm_<setting>`` for every setting of
``REALM_PERMISSION_GROUP_SETTINGS`` (a group id, or an anonymous group object), the four
deprecated policies Zulip 10.2 still computes from them (``realm_create_public_stream_policy``,
``realm_create_private_stream_policy``, ``realm_create_web_public_stream_policy``,
``realm_wildcard_mention_policy``) and ``server_supported_permission_settings``.
With ``realm_user``: the user's ``can_create_*_streams``, ``can_create_streams`` and
``can_invite_others_to_realm``, which are membership of the settings' groups (as Zulip
10.2's /register computes them: no rule for guests, no check that web-public channels are
enabled).

A ``realm``/``update_dict`` event of a setting updates all of these. Since membership can
change without such an event, the flags are recomputed from the state itself (the
setting values, ``realm_user_groups``, the user's role and join date) after the user's
groups, role or the realm's waiting period change; a client state without the settings or
without ``realm_user_groups`` keeps its flags.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.models import Role
from hubbub.queries.group_settings import (
    SECONDS_PER_DAY,
    get_group_setting_values,
    get_system_group_ids,
    in_system_group,
    members_of_group_setting_value,
)
from hubbub.realm_group_settings import (
    DEPRECATED_POLICIES,
    REALM_PERMISSION_GROUP_SETTINGS,
    GroupSettingValue,
    deprecated_policy_value,
    server_supported_permission_settings,
)
from hubbub.register import user_group_state
from hubbub.register.context import StateContext

# The /register keys that are membership of a setting's group.
FLAG_SETTINGS = {
    "can_create_private_streams": "can_create_private_channel_group",
    "can_create_public_streams": "can_create_public_channel_group",
    "can_create_web_public_streams": "can_create_web_public_channel_group",
    "can_invite_others_to_realm": "can_invite_users_group",
}


def _flags(member_of: dict[str, bool], *, web_public_enabled: bool) -> dict[str, bool]:
    """The ``can_*`` keys. Web-public streams also need the server to allow them and the
    organization's spectator access, as Zulip's ``can_create_web_public_streams``."""
    flags = {key: member_of[setting] for key, setting in FLAG_SETTINGS.items()}
    flags["can_create_web_public_streams"] &= web_public_enabled
    flags["can_create_streams"] = (
        flags["can_create_private_streams"]
        or flags["can_create_public_streams"]
        or flags["can_create_web_public_streams"]
    )
    return flags


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    want_realm, want_user = ctx.wanted("realm"), ctx.wanted("realm_user")
    if not want_realm and not want_user:
        return {}
    state: dict[str, Any] = {}
    system_ids = await get_system_group_ids(conn, ctx.realm.id)
    values = await get_group_setting_values(conn, ctx.realm, system_ids=system_ids)
    if want_realm:
        state.update({f"realm_{name}": value for name, value in values.items()})
        system_names = {group_id: name for name, group_id in system_ids.items()}
        for policy, (setting, _, _) in DEPRECATED_POLICIES.items():
            value = values[setting]
            name = system_names.get(value) if isinstance(value, int) else None
            state[f"realm_{policy}"] = deprecated_policy_value(policy, name)
        state["server_supported_permission_settings"] = server_supported_permission_settings()
    if want_user:
        now = time.time() if ctx.now is None else ctx.now
        member_of = {}
        for setting in FLAG_SETTINGS.values():
            found = await members_of_group_setting_value(
                conn, ctx.realm, values[setting], [ctx.me], system_ids=system_ids, now=now
            )
            member_of[setting] = ctx.me.id in found
        web_public = ctx.web_public_streams_enabled and ctx.realm.enable_spectator_access
        state.update(_flags(member_of, web_public_enabled=web_public))
    return state


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    """Apply one event; False when another part (or the rest of ``apply_event``) must
    apply it too or instead."""
    kind, op = event["type"], event.get("op")
    if kind == "realm" and op == "update_dict" and event.get("property") == "default":
        changes: dict[str, Any] = event["data"]
        if not changes or not changes.keys() <= REALM_PERMISSION_GROUP_SETTINGS.keys():
            return False
        for name, value in changes.items():
            if f"realm_{name}" in state:
                state[f"realm_{name}"] = value
        _refresh_deprecated_policies(state, changes.keys())
        _refresh_flags(state)
        return True
    if kind == "user_group":
        handled = user_group_state.apply(state, event)
        _refresh_flags(state)
        return handled
    if kind == "realm_user" and op == "update":
        person = event["person"]
        if "role" in person and person["user_id"] == state.get("user_id"):
            _refresh_flags(state, role=person["role"])
        return False
    if kind == "realm" and op == "update" and event["property"] == "waiting_period_threshold":
        _refresh_flags(state, waiting_period=event["value"])
    if kind == "realm" and op == "update" and event["property"] == "enable_spectator_access":
        # The rest of apply_event stores the value; the flag follows it.
        state["realm_enable_spectator_access"] = event["value"]
        _refresh_flags(state)
    return False


def _system_group_names(state: dict[str, Any]) -> dict[int, str] | None:
    groups = state.get("realm_user_groups")
    if groups is None:
        return None
    return {g["id"]: g["name"] for g in groups if g["is_system_group"]}


def _refresh_deprecated_policies(state: dict[str, Any], changed: Any) -> None:
    names = _system_group_names(state)
    for policy, (setting, _, _) in DEPRECATED_POLICIES.items():
        key, value = f"realm_{policy}", state.get(f"realm_{setting}")
        if setting not in changed or key not in state or value is None:
            continue
        if isinstance(value, int):
            if names is None:
                continue  # No way to tell whether the group is a system group.
            state[key] = deprecated_policy_value(policy, names.get(value))
        else:
            state[key] = deprecated_policy_value(policy, None)


def _own_role(state: dict[str, Any]) -> int:
    if state.get("is_owner"):
        return Role.OWNER
    if state.get("is_admin"):
        return Role.ADMINISTRATOR
    if state.get("is_moderator"):
        return Role.MODERATOR
    return Role.GUEST if state.get("is_guest") else Role.MEMBER


def _is_full_member(state: dict[str, Any], role: int, waiting_period: int) -> bool:
    if role in (Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR):
        return True
    if role != Role.MEMBER:
        return False
    me = next(
        (p for p in state.get("realm_users", ()) if p["user_id"] == state.get("user_id")), None
    )
    if me is None or waiting_period == 0:
        return True
    joined = datetime.fromisoformat(me["date_joined"]).timestamp()
    return (time.time() - joined) // SECONDS_PER_DAY >= waiting_period


def _in_value(
    state: dict[str, Any], value: GroupSettingValue, role: int, full_member: bool
) -> bool | None:
    groups = {g["id"]: g for g in state.get("realm_user_groups", ())}
    me = state["user_id"]
    if isinstance(value, int):
        pending = [value]
    else:
        if me in value["direct_members"]:
            return True
        pending = list(value["direct_subgroups"])
    seen: set[int] = set()
    while pending:
        group_id = pending.pop()
        if group_id in seen:
            continue
        seen.add(group_id)
        group = groups.get(group_id)
        if group is None:
            return None  # The state does not know the group.
        if group["is_system_group"]:
            if in_system_group(group["name"], role, full_member=full_member):
                return True
        elif me in group["members"]:
            return True
        pending.extend(group["direct_subgroup_ids"])
    return False


def _refresh_flags(
    state: dict[str, Any], *, role: int | None = None, waiting_period: int | None = None
) -> None:
    """Recompute the membership flags from the state, with the user's role or the realm's
    waiting period as an event about to change them says."""
    if "can_create_streams" not in state or "realm_user_groups" not in state:
        return
    own_role = _own_role(state) if role is None else role
    period = waiting_period
    if period is None:
        period = state.get("realm_waiting_period_threshold", 0)
    full_member = _is_full_member(state, own_role, int(period))
    member_of: dict[str, bool] = {}
    for setting in FLAG_SETTINGS.values():
        value = state.get(f"realm_{setting}")
        found = None if value is None else _in_value(state, value, own_role, full_member)
        if found is None:
            return
        member_of[setting] = found
    # A client that fetched no realm state knows neither; its flag follows membership.
    web_public = bool(
        state.get("server_web_public_streams_enabled", True)
        and state.get("realm_enable_spectator_access", True)
    )
    state.update(_flags(member_of, web_public_enabled=web_public))
