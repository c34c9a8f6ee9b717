"""``realm``/``update_dict`` events for the organization's group-valued permission settings,
and the /register keys that follow them (the settings, the deprecated policies computed
from them, and the user's ``can_create_*_streams`` / ``can_invite_others_to_realm``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from hubbub.actions.users import do_change_role, do_deactivate_user
from hubbub.models import Role, User
from hubbub.realm_group_settings import REALM_PERMISSION_GROUP_SETTINGS
from tests.events.verify import register, verify_action
from tests.group_settings_helpers import system_group_id
from tests.helpers import TestEnv, assert_success, without_id


def patch(env: TestEnv, params: dict[str, Any]) -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        assert_success(await env.client("desdemona").patch("/realm", params))

    return action


# The state these events change (the rest of /register is other modules' business).
TYPES: dict[str, Any] = {"fetch_event_types": ["realm", "realm_user", "realm_user_groups"]}


async def verify(
    env: TestEnv, user: User, action: Callable[[], Awaitable[object]], **kwargs: Any
) -> list[dict[str, Any]]:
    return await verify_action(env, user, action, **TYPES, **kwargs)


async def state_of(env: TestEnv, user: User) -> dict[str, Any]:
    return await register(env, user, **TYPES)


@pytest.mark.parametrize("name", list(REALM_PERMISSION_GROUP_SETTINGS))
async def test_each_setting_sends_update_dict(env: TestEnv, name: str) -> None:
    config = REALM_PERMISSION_GROUP_SETTINGS[name]
    target = "role:moderators"
    if config.allowed_system_groups:
        target = next(g for g in config.allowed_system_groups if g != config.default_group_name)
    new = await system_group_id(env, target)
    events = await verify(env, env.users["hamlet"], patch(env, {name: {"new": new}}), num_events=1)
    assert without_id(events[0]) == {
        "type": "realm",
        "op": "update_dict",
        "property": "default",
        "data": {name: new},
    }


async def test_anonymous_group_and_flags(env: TestEnv) -> None:
    hamlet, othello = env.users["hamlet"], env.users["othello"]
    value = {"direct_members": [othello.id], "direct_subgroups": []}
    events = await verify(
        env,
        hamlet,
        patch(env, {"can_create_public_channel_group": {"new": value}}),
        num_events=1,
    )
    assert events[0]["data"] == {"can_create_public_channel_group": value}
    state = await state_of(env, hamlet)
    assert state["can_create_public_streams"] is False
    # The deprecated policy of a group it cannot express: its widest value, members.
    assert state["realm_create_public_stream_policy"] == 1
    # Othello is in it; so is Hamlet once his own group is a subgroup.
    assert (await state_of(env, othello))["can_create_public_streams"] is True
    team = assert_success(
        await env.client("desdemona").post(
            "/user_groups/create", {"name": "team", "description": "", "members": [hamlet.id]}
        )
    )
    assert team
    team_id = await system_group_id(env, "team")
    value = {"direct_members": [othello.id], "direct_subgroups": [team_id]}
    await verify(
        env, hamlet, patch(env, {"can_create_public_channel_group": {"new": value}}), num_events=1
    )
    assert (await state_of(env, hamlet))["can_create_public_streams"] is True


async def test_deprecated_policies_follow(env: TestEnv) -> None:
    moderators = await system_group_id(env, "role:moderators")
    nobody = await system_group_id(env, "role:nobody")
    await verify(
        env,
        env.users["shiva"],
        patch(
            env,
            {
                "can_create_private_channel_group": {"new": moderators},
                "can_create_web_public_channel_group": {"new": nobody},
                "can_mention_many_users_group": {"new": moderators},
                "can_invite_users_group": {"new": nobody},
            },
        ),
        num_events=4,
    )
    state = await state_of(env, env.users["shiva"])
    assert state["realm_create_private_stream_policy"] == 4
    assert state["realm_create_web_public_stream_policy"] == 6
    assert state["realm_wildcard_mention_policy"] == 7
    assert state["can_create_private_streams"] is True
    assert state["can_invite_others_to_realm"] is False


async def test_membership_changes_update_flags(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    assert_success(
        await env.client("desdemona").post(
            "/user_groups/create", {"name": "creators", "description": "", "members": []}
        )
    )
    creators = await system_group_id(env, "creators")
    await verify(env, hamlet, patch(env, {"can_create_private_channel_group": {"new": creators}}))

    async def add_hamlet() -> None:
        assert_success(
            await env.client("desdemona").post(
                f"/user_groups/{creators}/members", {"add": [hamlet.id]}
            )
        )

    await verify(env, hamlet, add_hamlet, num_events=1)
    assert (await state_of(env, hamlet))["can_create_private_streams"] is True


async def test_role_change_updates_flags(env: TestEnv) -> None:
    admins = await system_group_id(env, "role:administrators")
    await verify(env, env.users["hamlet"], patch(env, {"can_invite_users_group": {"new": admins}}))

    async def promote() -> None:
        async with env.services.write() as tx:
            await do_change_role(tx, env.users["hamlet"], Role.ADMINISTRATOR)

    await verify(env, env.users["hamlet"], promote)
    assert (await state_of(env, env.users["hamlet"]))["can_invite_others_to_realm"] is True


async def test_waiting_period_updates_flags(env: TestEnv) -> None:
    full_members = await system_group_id(env, "role:fullmembers")
    await verify(
        env,
        env.users["hamlet"],
        patch(env, {"can_create_public_channel_group": {"new": full_members}}),
    )
    assert (await state_of(env, env.users["hamlet"]))["can_create_public_streams"] is True
    # A new account is not a full member while the waiting period lasts.
    await verify(
        env, env.users["hamlet"], patch(env, {"waiting_period_threshold": 30}), num_events=1
    )
    state = await state_of(env, env.users["hamlet"])
    assert state["can_create_public_streams"] is False
    assert (await state_of(env, env.users["shiva"]))["can_create_public_streams"] is True


async def test_clients_without_user_groups_keep_their_flags(env: TestEnv) -> None:
    """Without ``realm_user_groups`` a state cannot tell system groups from others; the
    setting's value is still applied."""
    admins = await system_group_id(env, "role:administrators")
    before = await register(env, env.users["hamlet"], fetch_event_types=["realm"])
    assert "realm_user_groups" not in before
    assert_success(
        await env.client("desdemona").patch(
            "/realm", {"can_create_public_channel_group": {"new": admins}}
        )
    )
    body = assert_success(
        await env.client(env.users["hamlet"]).get(
            "/events",
            {"queue_id": before["queue_id"], "last_event_id": -1, "dont_block": True},
        )
    )
    (event,) = body["events"]
    assert event["data"] == {"can_create_public_channel_group": admins}


async def test_deactivating_a_direct_member(env: TestEnv) -> None:
    """A deactivated user leaves the anonymous groups that name them (feature level 303):
    the deactivation sends each such setting's new value, once."""
    othello = env.users["othello"]
    value = {"direct_members": [othello.id, env.users["hamlet"].id], "direct_subgroups": []}
    await verify(
        env, env.users["hamlet"], patch(env, {"can_add_custom_emoji_group": {"new": value}})
    )

    async def deactivate() -> None:
        async with env.services.write() as tx:
            await do_deactivate_user(tx, othello)

    events = await verify(env, env.users["hamlet"], deactivate)
    updates = [e for e in events if e["type"] == "realm"]
    assert [e["data"] for e in updates] == [
        {
            "can_add_custom_emoji_group": {
                "direct_members": [env.users["hamlet"].id],
                "direct_subgroups": [],
            }
        }
    ]
