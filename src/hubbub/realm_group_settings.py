"""The organization's group-valued permission settings (Zulip 10.2, feature level 372).

A setting's value is a *group-setting value*: a user group id (a named group or a system
group of the realm), or an anonymous group ``{"direct_members": [user ids],
"direct_subgroups": [group ids]}`` whose members are the union of those users and those
groups' members. Each setting has a configuration (``GroupPermissionSetting``) saying which
values it accepts; ``/register`` sends them all as ``server_supported_permission_settings``.

Storage: a realm keeps a setting's value in its ``settings`` JSON under the setting's name
(an integer, or the anonymous group object with sorted, distinct ids) once it has been set
through ``PATCH /realm``. A setting never set has its default: the system group named by
``default_group_name``, or, for a realm whose settings still hold the Zulip 8.0 ``*_policy``
value that the setting replaced, the system group that policy meant (``legacy_group_name``),
as Zulip's own migrations translated them. Nothing here reads the database.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

NOBODY = "role:nobody"
OWNERS = "role:owners"
ADMINISTRATORS = "role:administrators"
MODERATORS = "role:moderators"
FULL_MEMBERS = "role:fullmembers"
MEMBERS = "role:members"
EVERYONE = "role:everyone"
INTERNET = "role:internet"


@dataclass(frozen=True)
class GroupPermissionSetting:
    """What a group-valued setting accepts, as ``server_supported_permission_settings``
    describes it (the fields ``allow_owners_group`` and ``id_field_name`` went at feature
    level 326)."""

    default_group_name: str
    allow_nobody_group: bool = True
    allow_everyone_group: bool = True
    require_system_group: bool = False
    allow_internet_group: bool = False
    default_for_system_groups: str | None = None
    allowed_system_groups: tuple[str, ...] = field(default=())

    def api_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["allowed_system_groups"] = list(self.allowed_system_groups)
        return {
            key: data[key]
            for key in (
                "require_system_group",
                "allow_internet_group",
                "allow_nobody_group",
                "allow_everyone_group",
                "default_group_name",
                "default_for_system_groups",
                "allowed_system_groups",
            )
        }


def _setting(
    default: str, *, nobody: bool = True, everyone: bool = False, **extra: Any
) -> GroupPermissionSetting:
    return GroupPermissionSetting(
        default_group_name=default,
        allow_nobody_group=nobody,
        allow_everyone_group=everyone,
        **extra,
    )


# The organization's settings, in the order Zulip 10.2 checks and sends them.
REALM_PERMISSION_GROUP_SETTINGS: dict[str, GroupPermissionSetting] = {
    "create_multiuse_invite_group": _setting(ADMINISTRATORS),
    "can_access_all_users_group": _setting(
        EVERYONE,
        nobody=False,
        everyone=True,
        require_system_group=True,
        allowed_system_groups=(EVERYONE, MEMBERS),
    ),
    "can_add_custom_emoji_group": _setting(MEMBERS),
    "can_add_subscribers_group": _setting(MEMBERS),
    "can_create_bots_group": _setting(MEMBERS),
    "can_create_groups": _setting(MEMBERS),
    "can_create_public_channel_group": _setting(MEMBERS),
    "can_create_private_channel_group": _setting(MEMBERS),
    "can_create_web_public_channel_group": _setting(
        OWNERS,
        require_system_group=True,
        allowed_system_groups=(MODERATORS, ADMINISTRATORS, OWNERS, NOBODY),
    ),
    "can_create_write_only_bots_group": _setting(MEMBERS),
    "can_delete_any_message_group": _setting(ADMINISTRATORS),
    "can_delete_own_message_group": _setting(EVERYONE, everyone=True),
    "can_invite_users_group": _setting(MEMBERS),
    "can_manage_all_groups": _setting(OWNERS, nobody=False),
    "can_manage_billing_group": _setting(ADMINISTRATORS, nobody=False),
    "can_mention_many_users_group": _setting(ADMINISTRATORS, everyone=True),
    "can_move_messages_between_channels_group": _setting(MEMBERS),
    "can_move_messages_between_topics_group": _setting(EVERYONE, everyone=True),
    "can_resolve_topics_group": _setting(EVERYONE, everyone=True),
    "can_summarize_topics_group": _setting(EVERYONE, everyone=True),
    "direct_message_initiator_group": _setting(EVERYONE, everyone=True),
    "direct_message_permission_group": _setting(EVERYONE, everyone=True),
}

# Only organization owners may change these (administrators change the others).
OWNER_ONLY_GROUP_SETTINGS = frozenset(
    {
        "create_multiuse_invite_group",
        "can_create_groups",
        "can_invite_users_group",
        "can_manage_all_groups",
        "can_manage_billing_group",
    }
)

# A channel's group-valued settings (feature levels 320-357), stored per stream
# (queries/stream_permissions.py). "stream_creator_or_nobody": an anonymous group of the
# stream's creator, or role:nobody when it has none.
STREAM_PERMISSION_GROUP_SETTINGS: dict[str, GroupPermissionSetting] = {
    "can_add_subscribers_group": _setting(NOBODY),
    "can_administer_channel_group": _setting("stream_creator_or_nobody"),
    "can_remove_subscribers_group": _setting(ADMINISTRATORS, everyone=True),
    "can_send_message_group": _setting(EVERYONE, everyone=True),
    "can_subscribe_group": _setting(NOBODY),
}
GROUP_PERMISSION_SETTINGS: dict[str, GroupPermissionSetting] = {
    "can_add_members_group": _setting("group_creator", default_for_system_groups=NOBODY),
    "can_join_group": _setting(NOBODY, default_for_system_groups=NOBODY),
    "can_leave_group": _setting(EVERYONE, everyone=True, default_for_system_groups=NOBODY),
    "can_manage_group": _setting("group_creator", default_for_system_groups=NOBODY),
    "can_mention_group": _setting(EVERYONE, everyone=True, default_for_system_groups=NOBODY),
    "can_remove_members_group": _setting(NOBODY, default_for_system_groups=NOBODY),
}


def server_supported_permission_settings() -> dict[str, dict[str, dict[str, Any]]]:
    return {
        "realm": {n: s.api_dict() for n, s in REALM_PERMISSION_GROUP_SETTINGS.items()},
        "stream": {n: s.api_dict() for n, s in STREAM_PERMISSION_GROUP_SETTINGS.items()},
        "group": {n: s.api_dict() for n, s in GROUP_PERMISSION_SETTINGS.items()},
    }


# ---------------------------------------------------------------------------------------
# Values

GroupSettingValue = int | dict[str, list[int]]


def anonymous_group(members: list[int], subgroups: list[int]) -> dict[str, list[int]]:
    """An anonymous group in canonical form: each list sorted, without repeats."""
    return {"direct_members": sorted(set(members)), "direct_subgroups": sorted(set(subgroups))}


def normalize_group_setting_value(value: GroupSettingValue) -> GroupSettingValue:
    """What the server stores and compares for a client's value: an anonymous group of one
    subgroup and no members is that subgroup's id (Zulip's parse_group_setting_value)."""
    if isinstance(value, int):
        return value
    if not value["direct_members"] and len(value["direct_subgroups"]) == 1:
        return value["direct_subgroups"][0]
    return anonymous_group(value["direct_members"], value["direct_subgroups"])


def group_setting_values_equal(first: GroupSettingValue, second: GroupSettingValue) -> bool:
    """Zulip's comparison: ids equal, or the same sets of members and of subgroups; an id
    never equals an object."""
    if isinstance(first, int) or isinstance(second, int):
        return first == second
    return set(first["direct_members"]) == set(second["direct_members"]) and set(
        first["direct_subgroups"]
    ) == set(second["direct_subgroups"])


# ---------------------------------------------------------------------------------------
# Zulip 8.0's policies, read from a realm that still stores them, and the deprecated
# policy values Zulip 10.2 still sends in /register.

_POLICY_GROUPS = {
    1: MEMBERS,
    2: ADMINISTRATORS,
    3: FULL_MEMBERS,
    4: MODERATORS,
    5: EVERYONE,
    6: NOBODY,
    7: OWNERS,
}
# wildcard_mention_policy numbers its values its own way; 4 ("stream administrators")
# meant organization administrators.
_WILDCARD_POLICY_GROUPS = {
    1: EVERYONE,
    2: MEMBERS,
    3: FULL_MEMBERS,
    4: ADMINISTRATORS,
    5: ADMINISTRATORS,
    6: NOBODY,
    7: MODERATORS,
}
# bot_creation_policy: 1 everyone, 2 only incoming-webhook bots for non-administrators,
# 3 administrators only.
_BOT_POLICY_GROUPS = {
    "can_create_bots_group": {1: MEMBERS, 2: ADMINISTRATORS, 3: ADMINISTRATORS},
    "can_create_write_only_bots_group": {1: MEMBERS, 2: MEMBERS, 3: ADMINISTRATORS},
}
# The 8.0 policy each setting replaced, when a realm still stores one.
_LEGACY_POLICIES = {
    "can_add_custom_emoji_group": "add_custom_emoji_policy",
    "can_add_subscribers_group": "invite_to_stream_policy",
    "can_create_groups": "user_group_edit_policy",
    "can_create_public_channel_group": "create_public_stream_policy",
    "can_create_private_channel_group": "create_private_stream_policy",
    "can_create_web_public_channel_group": "create_web_public_stream_policy",
    "can_delete_own_message_group": "delete_own_message_policy",
    "can_invite_users_group": "invite_to_realm_policy",
    "can_manage_all_groups": "user_group_edit_policy",
    "can_mention_many_users_group": "wildcard_mention_policy",
    "can_move_messages_between_channels_group": "move_messages_between_streams_policy",
    "can_move_messages_between_topics_group": "edit_topic_policy",
    "can_resolve_topics_group": "edit_topic_policy",
    "can_create_bots_group": "bot_creation_policy",
    "can_create_write_only_bots_group": "bot_creation_policy",
    "direct_message_permission_group": "private_message_policy",
}


def legacy_group_name(settings: Mapping[str, Any], name: str) -> str | None:
    """The system group a Zulip 8.0 policy stored in ``settings`` meant for ``name``, or
    None when the realm stores no such policy."""
    policy_name = _LEGACY_POLICIES.get(name)
    policy = settings.get(policy_name) if policy_name else None
    if not isinstance(policy, int):
        return None
    if name in _BOT_POLICY_GROUPS:
        return _BOT_POLICY_GROUPS[name].get(policy)
    if name == "can_mention_many_users_group":
        return _WILDCARD_POLICY_GROUPS.get(policy)
    if name == "direct_message_permission_group":
        # 1: direct messages allowed; 2: disabled (to anyone but bots and oneself).
        return {1: EVERYONE, 2: NOBODY}.get(policy)
    if name == "can_manage_all_groups":
        # In 8.0 only administrators and moderators passing the policy could edit every
        # group (other members only their own groups).
        return ADMINISTRATORS if policy == 2 else MODERATORS
    return _POLICY_GROUPS.get(policy)


def default_group_name(settings: Mapping[str, Any], name: str) -> str:
    """The system group of a setting that was never set through ``PATCH /realm``."""
    return legacy_group_name(settings, name) or (
        REALM_PERMISSION_GROUP_SETTINGS[name].default_group_name
    )


# Zulip 10.2 still sends these four policies in /register, computed from the group
# settings that replaced them (each: the setting, the system groups it maps and the value
# for any other group).
_COMMON_POLICY_VALUES = {MEMBERS: 1, ADMINISTRATORS: 2, FULL_MEMBERS: 3, MODERATORS: 4}
DEPRECATED_POLICIES: dict[str, tuple[str, dict[str, int], int]] = {
    "create_public_stream_policy": ("can_create_public_channel_group", _COMMON_POLICY_VALUES, 1),
    "create_private_stream_policy": (
        "can_create_private_channel_group",
        _COMMON_POLICY_VALUES,
        1,
    ),
    "create_web_public_stream_policy": (
        "can_create_web_public_channel_group",
        {ADMINISTRATORS: 2, MODERATORS: 4, NOBODY: 6, OWNERS: 7},
        4,
    ),
    "wildcard_mention_policy": (
        "can_mention_many_users_group",
        {
            EVERYONE: 1,
            MEMBERS: 2,
            FULL_MEMBERS: 3,
            ADMINISTRATORS: 5,
            NOBODY: 6,
            MODERATORS: 7,
        },
        1,
    ),
}


def deprecated_policy_value(policy: str, system_group_name: str | None) -> int:
    """The deprecated ``policy`` value for a setting whose value is the system group named
    ``system_group_name`` (None: any other value). A group the old policy could not express
    gives its widest value (Zulip's get_corresponding_policy_value_for_group_setting)."""
    _, values, otherwise = DEPRECATED_POLICIES[policy]
    if system_group_name is None:
        return otherwise
    return values.get(system_group_name, otherwise)
