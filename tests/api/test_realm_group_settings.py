"""The organization's group-valued permission settings: ``PATCH /realm`` with ``{new, old}``
changes, their validation, and what ``/register`` sends (Zulip 10.2, feature level 372)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import sqlalchemy as sa

from hubbub.actions.users import do_deactivate_user
from hubbub.db.tables import realm as realm_table
from hubbub.queries.realms import get_realm_by_id
from hubbub.realm_group_settings import REALM_PERMISSION_GROUP_SETTINGS
from tests.group_settings_helpers import create_user_group, system_group_id
from tests.helpers import TestEnv, assert_error, assert_success

REMOVED_POLICIES = (
    "add_custom_emoji_policy",
    "bot_creation_policy",
    "delete_own_message_policy",
    "edit_topic_policy",
    "invite_to_realm_policy",
    "invite_to_stream_policy",
    "move_messages_between_streams_policy",
    "private_message_policy",
    "user_group_edit_policy",
)
DEPRECATED_POLICIES = (
    "create_public_stream_policy",
    "create_private_stream_policy",
    "create_web_public_stream_policy",
    "wildcard_mention_policy",
)


async def set_setting(
    env: TestEnv, name: str, new: Any, *, old: Any = None, user: str = "desdemona"
) -> dict[str, Any]:
    change = {"new": new} if old is None else {"new": new, "old": old}
    return assert_success(await env.client(user).patch("/realm", {name: change}))


async def stored_settings(env: TestEnv) -> dict[str, Any]:
    async with env.services.db.read() as conn:
        realm = await get_realm_by_id(conn, env.realm.id)
    assert realm is not None
    return realm.settings


async def realm_state(env: TestEnv, user: str = "hamlet") -> dict[str, Any]:
    return assert_success(
        await env.client(user).post("/register", {"fetch_event_types": ["realm", "realm_user"]})
    )


async def test_register_defaults(env: TestEnv) -> None:
    state = await realm_state(env)
    for name, config in REALM_PERMISSION_GROUP_SETTINGS.items():
        assert state[f"realm_{name}"] == await system_group_id(env, config.default_group_name), name
    # Computed from the defaults: members, members, owners, administrators.
    assert [state[f"realm_{p}"] for p in DEPRECATED_POLICIES] == [1, 1, 7, 5]
    for policy in REMOVED_POLICIES:
        assert f"realm_{policy}" not in state
    assert "can_subscribe_other_users" not in state
    supported = state["server_supported_permission_settings"]
    assert set(supported) == {"realm", "stream", "group"}
    assert list(supported["realm"]) == list(REALM_PERMISSION_GROUP_SETTINGS)
    assert supported["realm"]["can_create_web_public_channel_group"] == {
        "require_system_group": True,
        "allow_internet_group": False,
        "allow_nobody_group": True,
        "allow_everyone_group": False,
        "default_group_name": "role:owners",
        "default_for_system_groups": None,
        "allowed_system_groups": [
            "role:moderators",
            "role:administrators",
            "role:owners",
            "role:nobody",
        ],
    }
    assert set(supported["stream"]) == {
        "can_add_subscribers_group",
        "can_administer_channel_group",
        "can_remove_subscribers_group",
        "can_send_message_group",
        "can_subscribe_group",
    }
    assert supported["group"]["can_mention_group"]["default_for_system_groups"] == "role:nobody"
    # Membership flags: a member may create public channels and invite; web-public
    # channels are for owners by default.
    assert state["can_create_public_streams"] and state["can_invite_others_to_realm"]
    assert not state["can_create_web_public_streams"]


@pytest.mark.parametrize("name", list(REALM_PERMISSION_GROUP_SETTINGS))
async def test_each_setting_takes_a_group_id(env: TestEnv, name: str) -> None:
    config = REALM_PERMISSION_GROUP_SETTINGS[name]
    # No setting defaults to moderators; the restricted ones take another allowed group.
    target = "role:moderators"
    if config.allowed_system_groups:
        target = next(g for g in config.allowed_system_groups if g != config.default_group_name)
    new = await system_group_id(env, target)
    body = await set_setting(env, name, new)
    assert body[name] == new
    assert (await stored_settings(env))[name] == new
    assert (await realm_state(env))[f"realm_{name}"] == new
    # The same value again changes nothing and is not reported.
    body = await set_setting(env, name, new)
    assert name not in body


async def test_anonymous_groups(env: TestEnv) -> None:
    hamlet, othello = env.users["hamlet"].id, env.users["othello"].id
    moderators = await system_group_id(env, "role:moderators")
    value = {"direct_members": [othello, hamlet, othello], "direct_subgroups": [moderators]}
    body = await set_setting(env, "can_add_custom_emoji_group", value)
    canonical = {"direct_members": sorted([hamlet, othello]), "direct_subgroups": [moderators]}
    assert body["can_add_custom_emoji_group"] == canonical
    assert (await stored_settings(env))["can_add_custom_emoji_group"] == canonical
    assert (await realm_state(env))["realm_can_add_custom_emoji_group"] == canonical
    # The same members in another order are the same value.
    same = {"direct_members": [othello, hamlet], "direct_subgroups": [moderators]}
    assert "can_add_custom_emoji_group" not in await set_setting(
        env, "can_add_custom_emoji_group", same, old=same
    )
    # One subgroup and no members is that subgroup.
    body = await set_setting(
        env, "can_add_custom_emoji_group", {"direct_members": [], "direct_subgroups": [moderators]}
    )
    assert body["can_add_custom_emoji_group"] == moderators
    # An empty anonymous group stays one (it has no members).
    empty: dict[str, list[int]] = {"direct_members": [], "direct_subgroups": []}
    body = await set_setting(env, "can_add_custom_emoji_group", empty)
    assert body["can_add_custom_emoji_group"] == empty


async def test_deactivated_users_are_not_shown(env: TestEnv) -> None:
    hamlet, othello = env.users["hamlet"], env.users["othello"]
    value = {"direct_members": [hamlet.id, othello.id], "direct_subgroups": []}
    await set_setting(env, "can_create_groups", value)
    async with env.services.write() as tx:
        await do_deactivate_user(tx, othello)
    state = await realm_state(env, "iago")
    assert state["realm_can_create_groups"] == {
        "direct_members": [hamlet.id],
        "direct_subgroups": [],
    }
    # ... and the value to compare ``old`` with is the one shown.
    assert_success(
        await env.client("desdemona").patch(
            "/realm",
            {
                "can_create_groups": {
                    "new": await system_group_id(env, "role:members"),
                    "old": {"direct_members": [hamlet.id], "direct_subgroups": []},
                }
            },
        )
    )


async def test_old_value_must_match(env: TestEnv) -> None:
    members, admins = (
        await system_group_id(env, "role:members"),
        await system_group_id(env, "role:administrators"),
    )
    assert_error(
        await env.client("iago").patch(
            "/realm", {"can_add_custom_emoji_group": {"new": admins, "old": admins}}
        ),
        "'old' value does not match the expected value.",
    )
    assert "can_add_custom_emoji_group" not in await stored_settings(env)
    body = await set_setting(env, "can_add_custom_emoji_group", admins, old=members, user="iago")
    assert body["can_add_custom_emoji_group"] == admins
    # The object form of one subgroup compares as that subgroup.
    body = await set_setting(
        env,
        "can_add_custom_emoji_group",
        members,
        old={"direct_members": [], "direct_subgroups": [admins]},
    )
    assert body["can_add_custom_emoji_group"] == members
    assert_error(
        await env.client("iago").patch(
            "/realm",
            {
                "can_add_custom_emoji_group": {
                    "new": admins,
                    "old": {
                        "direct_members": [env.users["iago"].id],
                        "direct_subgroups": [members],
                    },
                }
            },
        ),
        "'old' value does not match the expected value.",
    )


async def test_invalid_values(env: TestEnv) -> None:
    nobody, everyone = (
        await system_group_id(env, "role:nobody"),
        await system_group_id(env, "role:everyone"),
    )
    internet, moderators = (
        await system_group_id(env, "role:internet"),
        await system_group_id(env, "role:moderators"),
    )
    team = await create_user_group(env, "team", ["hamlet"], user="desdemona")
    cases: list[tuple[str, Any, str]] = [
        ("can_add_custom_emoji_group", 99999, "Invalid user group"),
        (
            "can_access_all_users_group",
            team,
            "'can_access_all_users_group' must be a system user group.",
        ),
        (
            "can_create_web_public_channel_group",
            {"direct_members": [env.users["iago"].id], "direct_subgroups": []},
            "'can_create_web_public_channel_group' must be a system user group.",
        ),
        (
            "can_access_all_users_group",
            moderators,
            "'can_access_all_users_group' setting cannot be set to 'role:moderators' group.",
        ),
        (
            "can_manage_all_groups",
            nobody,
            "'can_manage_all_groups' setting cannot be set to 'role:nobody' group.",
        ),
        (
            "can_create_groups",
            everyone,
            "'can_create_groups' setting cannot be set to 'role:everyone' group.",
        ),
        (
            "direct_message_permission_group",
            internet,
            "'direct_message_permission_group' setting cannot be set to 'role:internet' group.",
        ),
        (
            "can_add_custom_emoji_group",
            {"direct_members": [99999], "direct_subgroups": []},
            "Invalid user ID: 99999",
        ),
        (
            "can_add_custom_emoji_group",
            {"direct_members": [], "direct_subgroups": [team, 99999]},
            "Invalid user group ID: 99999",
        ),
    ]
    for name, new, msg in cases:
        assert_error(await env.client("desdemona").patch("/realm", {name: {"new": new}}), msg)
    deactivated = env.users["othello"]
    async with env.services.write() as tx:
        await do_deactivate_user(tx, deactivated)
    assert_error(
        await env.client("desdemona").patch(
            "/realm",
            {
                "can_add_custom_emoji_group": {
                    "new": {"direct_members": [deactivated.id], "direct_subgroups": []}
                }
            },
        ),
        f"User {deactivated.id} is deactivated",
    )
    malformed: list[tuple[str, str]] = [
        ("5", "can_add_custom_emoji_group is not a dict"),
        ("{", "can_add_custom_emoji_group is not valid JSON"),
        ('{"old": 5}', "can_add_custom_emoji_group key is missing"),
        ('{"new": true}', "can_add_custom_emoji_group is not an integer"),
    ]
    for raw, msg in malformed:
        assert_error(
            await env.client("desdemona").patch("/realm", {"can_add_custom_emoji_group": raw}),
            msg,
        )
    # A valid change beside an invalid one is not stored either.
    assert_error(
        await env.client("desdemona").patch(
            "/realm",
            {
                "name": "Elsinore",
                "can_create_groups": {"new": moderators},
                "can_manage_all_groups": {"new": nobody},
            },
        ),
        "'can_manage_all_groups' setting cannot be set to 'role:nobody' group.",
    )
    assert await stored_settings(env) == {}


async def test_owner_only_settings(env: TestEnv) -> None:
    admins = await system_group_id(env, "role:administrators")
    for name in (
        "create_multiuse_invite_group",
        "can_create_groups",
        "can_invite_users_group",
        "can_manage_all_groups",
        "can_manage_billing_group",
    ):
        assert_error(
            await env.client("iago").patch("/realm", {name: {"new": admins}}),
            "Must be an organization owner",
            code="UNAUTHORIZED_PRINCIPAL",
        )
    assert await stored_settings(env) == {}
    # Administrators set the others.
    body = await set_setting(env, "can_delete_any_message_group", admins, user="iago")
    assert "can_delete_any_message_group" not in body  # Already the default.
    moderators = await system_group_id(env, "role:moderators")
    body = await set_setting(env, "can_delete_any_message_group", moderators, user="iago")
    assert body["can_delete_any_message_group"] == moderators
    assert_error(
        await env.client("shiva").patch(
            "/realm", {"can_delete_any_message_group": {"new": admins}}
        ),
        "Must be an organization administrator",
        code="UNAUTHORIZED_PRINCIPAL",
    )


async def test_removed_policies_are_ignored(env: TestEnv) -> None:
    params = {policy: 2 for policy in (*REMOVED_POLICIES, *DEPRECATED_POLICIES)}
    body = assert_success(await env.client("desdemona").patch("/realm", params))
    assert body["ignored_parameters_unsupported"] == sorted(params)
    assert await stored_settings(env) == {}


async def test_zulip_8_policies_still_stored_are_read(env: TestEnv) -> None:
    """A realm upgraded from a Zulip 8.0 server keeps its permissions until they are set."""
    legacy = {
        "create_public_stream_policy": 2,
        "edit_topic_policy": 4,
        "wildcard_mention_policy": 7,
        "private_message_policy": 2,
        "bot_creation_policy": 2,
    }
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(realm_table)
            .where(realm_table.c.id == env.realm.id)
            .values(settings=orjson.dumps(legacy).decode())
        )
    state = await realm_state(env)
    admins, moderators = (
        await system_group_id(env, "role:administrators"),
        await system_group_id(env, "role:moderators"),
    )
    assert state["realm_can_create_public_channel_group"] == admins
    assert state["realm_create_public_stream_policy"] == 2
    assert state["realm_can_move_messages_between_topics_group"] == moderators
    assert state["realm_can_resolve_topics_group"] == moderators
    assert state["realm_can_mention_many_users_group"] == moderators
    assert state["realm_wildcard_mention_policy"] == 7
    assert state["realm_direct_message_permission_group"] == await system_group_id(
        env, "role:nobody"
    )
    assert state["realm_can_create_bots_group"] == admins
    assert state["realm_can_create_write_only_bots_group"] == await system_group_id(
        env, "role:members"
    )
    assert state["can_create_public_streams"] is False
    # Set explicitly, a setting no longer follows the old policy, even at its default.
    members = await system_group_id(env, "role:members")
    await set_setting(env, "can_create_public_channel_group", members, old=admins)
    state = await realm_state(env)
    assert state["realm_can_create_public_channel_group"] == members
    assert state["can_create_public_streams"] is True


async def test_groups_used_by_settings_cannot_be_deleted(env: TestEnv) -> None:
    team = await create_user_group(env, "team", ["hamlet"], user="desdemona")
    crew = await create_user_group(env, "crew", ["othello"], user="desdemona")
    await set_setting(env, "can_create_groups", team)
    await set_setting(
        env, "can_add_custom_emoji_group", {"direct_members": [], "direct_subgroups": [crew, team]}
    )
    for group in (team, crew):
        assert_error(
            await env.client("desdemona").post(f"/user_groups/{group}/deactivate"),
            "Cannot deactivate user group in use.",
            code="CANNOT_DEACTIVATE_GROUP_IN_USE",
        )
    await set_setting(env, "can_add_custom_emoji_group", await system_group_id(env, "role:members"))
    assert_success(await env.client("desdemona").post(f"/user_groups/{crew}/deactivate"))
