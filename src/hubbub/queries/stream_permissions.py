"""A stream's group-valued permission settings (Zulip 10.2) and who holds them.

Each stream stores all five settings of ``STREAM_PERMISSION_GROUP_SETTINGS`` in its
``permission_settings`` JSON: a group id or an anonymous group. The deprecated
``stream_post_policy`` (replaced at feature level 333) is derived from
``can_send_message_group`` for the clients that still read it.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.models import Realm, Stream, User
from hubbub.queries.group_settings import get_system_group_ids, members_of_group_setting_value
from hubbub.queries.realms import get_realm_by_id
from hubbub.realm_group_settings import (
    ADMINISTRATORS,
    EVERYONE,
    FULL_MEMBERS,
    MODERATORS,
    NOBODY,
    STREAM_PERMISSION_GROUP_SETTINGS,
    GroupSettingValue,
    anonymous_group,
)

STREAM_SETTING_NAMES = tuple(STREAM_PERMISSION_GROUP_SETTINGS)

# stream_post_policy's values and the system groups they mean.
POST_POLICY_GROUPS = {1: EVERYONE, 2: ADMINISTRATORS, 3: FULL_MEMBERS, 4: MODERATORS}
_GROUP_POST_POLICIES = {name: policy for policy, name in POST_POLICY_GROUPS.items()}
# A value the old policy cannot express reads as "moderators" (Zulip's
# get_stream_post_policy_value_based_on_group_setting).
_OTHER_POST_POLICY = 4


def stream_setting_values(s: Stream) -> dict[str, GroupSettingValue]:
    """The stream's five values, as stored."""
    stored: dict[str, Any] = orjson.loads(s.permission_settings or "{}")
    values: dict[str, GroupSettingValue] = {}
    for name in STREAM_SETTING_NAMES:
        value = stored.get(name)
        if isinstance(value, dict):
            values[name] = anonymous_group(value["direct_members"], value["direct_subgroups"])
        elif isinstance(value, int):
            values[name] = value
    return values


def stream_setting_value(s: Stream, name: str) -> GroupSettingValue | None:
    return stream_setting_values(s).get(name)


def dump_stream_settings(values: dict[str, GroupSettingValue]) -> str:
    return orjson.dumps(values, option=orjson.OPT_SORT_KEYS).decode()


def default_stream_settings(
    system_ids: dict[str, int], creator_id: int | None
) -> dict[str, GroupSettingValue]:
    """A new stream's values: each setting's default system group, and for
    ``can_administer_channel_group`` ("stream_creator_or_nobody") an anonymous group of
    the creator."""
    values: dict[str, GroupSettingValue] = {}
    for name, config in STREAM_PERMISSION_GROUP_SETTINGS.items():
        if config.default_group_name == "stream_creator_or_nobody":
            values[name] = (
                anonymous_group([creator_id], []) if creator_id is not None else system_ids[NOBODY]
            )
        else:
            values[name] = system_ids[config.default_group_name]
    return values


def legacy_post_policy(value: GroupSettingValue, system_ids: dict[str, int]) -> int:
    """The deprecated ``stream_post_policy`` for a ``can_send_message_group`` value; kept
    in the stream's ``stream_post_policy`` column whenever that setting changes."""
    system_names = {group_id: name for name, group_id in system_ids.items()}
    if isinstance(value, int) and value in system_names:
        return _GROUP_POST_POLICIES.get(system_names[value], _OTHER_POST_POLICY)
    return _OTHER_POST_POLICY


async def user_in_stream_setting(
    conn: AsyncConnection,
    realm: Realm,
    user: User,
    s: Stream,
    name: str,
    *,
    system_ids: dict[str, int] | None = None,
    now: float | None = None,
) -> bool:
    """Whether ``user`` belongs to the group of the stream's setting ``name``; a guest never
    holds a setting that may not be "everyone" (Zulip's user_has_permission_for_group_setting)."""
    if user.is_guest and not STREAM_PERMISSION_GROUP_SETTINGS[name].allow_everyone_group:
        return False
    value = stream_setting_value(s, name)
    if value is None:
        return False
    if system_ids is None:
        system_ids = await get_system_group_ids(conn, realm.id)
    at = time.time() if now is None else now
    members = await members_of_group_setting_value(
        conn, realm, value, [user], system_ids=system_ids, now=at
    )
    return user.id in members


async def can_administer_stream(conn: AsyncConnection, realm: Realm, user: User, s: Stream) -> bool:
    """Administrators administer every stream; others by ``can_administer_channel_group``."""
    if user.is_realm_admin:
        return True
    return await user_in_stream_setting(conn, realm, user, s, "can_administer_channel_group")


# The settings whose members may read a private stream's messages without subscribing:
# Zulip 10.2's groups granting content access (feature level 354). Its
# ``can_administer_channel_group`` grants access to the stream's metadata only.
CONTENT_ACCESS_SETTINGS = ("can_add_subscribers_group", "can_subscribe_group")
METADATA_ACCESS_SETTINGS = ("can_administer_channel_group", *CONTENT_ACCESS_SETTINGS)


async def user_in_any_stream_setting(
    conn: AsyncConnection, user: User, s: Stream, names: tuple[str, ...]
) -> bool:
    """Whether ``user`` belongs to the group of one of the stream's settings ``names``."""
    found = await get_realm_by_id(conn, user.realm_id)
    if found is None:
        return False
    system_ids = await get_system_group_ids(conn, found.id)
    for name in names:
        if await user_in_stream_setting(conn, found, user, s, name, system_ids=system_ids):
            return True
    return False


async def has_content_access_via_groups(conn: AsyncConnection, user: User, s: Stream) -> bool:
    """Whether ``user`` may read the private stream ``s`` through a group granting content
    access. Never a guest: neither setting may be "everyone"."""
    if user.is_guest:
        return False
    return await user_in_any_stream_setting(conn, user, s, CONTENT_ACCESS_SETTINGS)


async def has_content_access(
    conn: AsyncConnection, user: User, target: Stream, *, subscribed: bool
) -> bool:
    """Whether ``user`` may read ``target``'s messages: subscribed, a public stream (not for
    guests), a web-public one, or a private one whose ``can_add_subscribers_group`` or
    ``can_subscribe_group`` holds them (Zulip 10.2)."""
    if target.is_web_public or subscribed:
        return True
    if user.is_guest:
        return False
    if target.is_public:
        return True
    return await has_content_access_via_groups(conn, user, target)


async def group_readable_stream_ids(
    conn: AsyncConnection, user: User, streams: list[Stream]
) -> set[int]:
    """Of ``streams`` (the caller leaves out those the user is subscribed to), the private
    ones with shared history that the user may read through a group granting content
    access: their whole history is readable, as to a subscriber."""
    return {
        s.id
        for s in streams
        if s.invite_only
        and s.history_public_to_subscribers
        and await has_content_access_via_groups(conn, user, s)
    }
