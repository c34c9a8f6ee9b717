"""The actions the organization's group-valued permissions govern (Zulip 10.2): membership
through named groups, subgroups and anonymous groups, system groups by role,
``role:fullmembers`` by the waiting period, and the guest rule."""

from __future__ import annotations

from typing import Any

from tests.group_settings_helpers import create_user_group, set_group_setting
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import send_direct_message


async def create_stream(env: TestEnv, user: str, name: str, **options: Any) -> Any:
    return await env.client(user).post(
        "/users/me/subscriptions", {"subscriptions": [{"name": name}], **options}
    )


async def flags(env: TestEnv, user: str) -> dict[str, Any]:
    return assert_success(
        await env.client(user).post("/register", {"fetch_event_types": ["realm_user"]})
    )


async def test_channel_creation_through_nested_groups(env: TestEnv) -> None:
    inner = await create_user_group(env, "inner", ["othello"], user="desdemona")
    outer = await create_user_group(env, "outer", [], user="desdemona")
    assert_success(
        await env.client("desdemona").post(f"/user_groups/{outer}/subgroups", {"add": [inner]})
    )
    await set_group_setting(env, "can_create_public_channel_group", outer)
    assert_error(await create_stream(env, "hamlet", "by hamlet"), "Insufficient permission")
    assert_error(await create_stream(env, "iago", "by iago"), "Insufficient permission")
    assert_success(await create_stream(env, "othello", "by othello"))
    # Private channels follow their own setting (members by default).
    assert_success(await create_stream(env, "hamlet", "private", invite_only=True))
    await set_group_setting(
        env,
        "can_create_private_channel_group",
        {"direct_members": [env.users["hamlet"].id], "direct_subgroups": []},
    )
    assert_error(
        await create_stream(env, "othello", "private 2", invite_only=True),
        "Insufficient permission",
    )
    assert_success(await create_stream(env, "hamlet", "private 3", invite_only=True))
    assert (await flags(env, "othello"))["can_create_public_streams"] is True
    assert (await flags(env, "hamlet"))["can_create_public_streams"] is False


async def test_full_members_and_the_waiting_period(env: TestEnv) -> None:
    await set_group_setting(env, "can_create_public_channel_group", "role:fullmembers")
    assert_success(await create_stream(env, "hamlet", "day one"))
    assert_success(await env.client("desdemona").patch("/realm", {"waiting_period_threshold": 5}))
    # Every account of the test realm is new: only moderators and above are full members.
    assert_error(await create_stream(env, "hamlet", "too new"), "Insufficient permission")
    assert (await flags(env, "hamlet"))["can_create_public_streams"] is False
    assert_success(await create_stream(env, "shiva", "moderated"))
    assert_error(await create_stream(env, "polonius", "guest"), "Insufficient permission")


async def test_guests_never_hold_permissions_everyone_cannot_have(env: TestEnv) -> None:
    polonius = env.users["polonius"]
    await set_group_setting(
        env,
        "can_create_public_channel_group",
        {"direct_members": [polonius.id], "direct_subgroups": []},
    )
    assert_error(await create_stream(env, "polonius", "guest channel"), "Insufficient permission")
    # /register reports membership, as Zulip 10.2 does.
    assert (await flags(env, "polonius"))["can_create_public_streams"] is True
    # A setting that may be everyone lets a guest in.
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("polonius", "Denmark")
    await set_group_setting(env, "can_move_messages_between_topics_group", "role:members")
    message_id = int(
        assert_success(
            await env.client("hamlet").post(
                "/messages", {"type": "stream", "to": "Denmark", "topic": "a", "content": "x"}
            )
        )["id"]
    )
    assert_error(
        await env.client("polonius").patch(f"/messages/{message_id}", {"topic": "b"}),
        "You don't have permission to edit this message",
    )
    guest = {"direct_members": [polonius.id], "direct_subgroups": []}
    await set_group_setting(env, "can_move_messages_between_topics_group", guest)
    assert_success(await env.client("polonius").patch(f"/messages/{message_id}", {"topic": "b"}))


async def test_subscribing_others(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    othello = env.users["othello"].id
    await set_group_setting(env, "can_add_subscribers_group", "role:administrators")
    params = {"subscriptions": [{"name": "Denmark"}], "principals": [othello]}
    assert_error(
        await env.client("hamlet").post("/users/me/subscriptions", params),
        "Insufficient permission",
    )
    assert_success(await env.client("iago").post("/users/me/subscriptions", params))


async def direct(env: TestEnv, sender: str, to: list[str]) -> Any:
    ids = [env.users[name].id for name in to]
    return await env.client(sender).post(
        "/messages", {"type": "direct", "to": ids, "content": "hi"}
    )


async def test_direct_message_permission_group(env: TestEnv) -> None:
    await set_group_setting(env, "direct_message_permission_group", "role:administrators")
    denied = "This conversation does not include any users who can authorize it."
    assert_error(await direct(env, "hamlet", ["othello"]), denied)
    assert_error(await direct(env, "hamlet", ["othello", "shiva"]), denied)
    # Someone in the group, sender or recipient, authorizes the conversation.
    assert_success(await direct(env, "hamlet", ["iago"]))
    assert_success(await direct(env, "hamlet", ["othello", "iago"]))
    assert_success(await direct(env, "iago", ["hamlet"]))
    # Oneself and bots are always fine.
    assert_success(await direct(env, "hamlet", ["hamlet"]))
    bot = await env.create_user("helper-bot@example.com", "Helper", bot_owner=env.users["hamlet"])
    env.users["bot"] = bot
    assert_success(await direct(env, "hamlet", ["bot"]))
    assert_success(await direct(env, "bot", ["othello"]))
    # An empty anonymous group authorizes nobody, yet is not "disabled".
    await set_group_setting(
        env, "direct_message_permission_group", {"direct_members": [], "direct_subgroups": []}
    )
    assert_error(await direct(env, "iago", ["hamlet"]), denied)
    await set_group_setting(env, "direct_message_permission_group", "role:nobody")
    assert_error(
        await direct(env, "iago", ["hamlet"]), "Direct messages are disabled in this organization."
    )
    # An anonymous group: its members and its subgroups' members authorize.
    team = await create_user_group(env, "team", ["othello"], user="desdemona")
    await set_group_setting(
        env,
        "direct_message_permission_group",
        {"direct_members": [env.users["shiva"].id], "direct_subgroups": [team]},
    )
    assert_success(await direct(env, "hamlet", ["othello"]))
    assert_success(await direct(env, "hamlet", ["shiva"]))
    assert_error(await direct(env, "hamlet", ["iago"]), denied)


async def test_direct_message_initiator_group(env: TestEnv) -> None:
    await set_group_setting(env, "direct_message_initiator_group", "role:moderators")
    refused = "You do not have permission to initiate direct message conversations."
    assert_error(await direct(env, "hamlet", ["othello"]), refused)
    assert_error(await direct(env, "hamlet", ["othello", "iago"]), refused)
    # Into a conversation that has messages, anyone may write, in either direction.
    await send_direct_message(env, "shiva", ["hamlet"])
    assert_success(await direct(env, "hamlet", ["shiva"]))
    await send_direct_message(env, "iago", ["hamlet", "othello"])
    assert_success(await direct(env, "hamlet", ["othello", "iago"]))
    assert_error(await direct(env, "hamlet", ["othello", "shiva"]), refused)
    # The same checks when scheduling.
    schedule = {
        "type": "direct",
        "to": [env.users["othello"].id],
        "content": "later",
        "scheduled_delivery_timestamp": int(env.services.clock.now()) + 3600,
    }
    assert_error(await env.client("hamlet").post("/scheduled_messages", schedule), refused)
    assert_success(await env.client("shiva").post("/scheduled_messages", schedule))
