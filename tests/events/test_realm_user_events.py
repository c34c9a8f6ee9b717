"""Every ``realm_user`` / ``realm`` event: applying it to old state gives the new state."""

from __future__ import annotations

import sqlalchemy as sa

from hubbub.actions.user_events import notify_user_updated
from hubbub.db.tables import custom_profile_field
from hubbub.models import Role
from tests.events.verify import register, verify_action
from tests.helpers import TestEnv, assert_success


async def test_user_created(env: TestEnv) -> None:
    async def action() -> None:
        assert_success(
            await env.client("iago").post(
                "/users",
                {"email": "new@example.com", "password": "long-enough", "full_name": "New Person"},
            )
        )

    events = await verify_action(env, env.users["hamlet"], action, num_events=3)
    person = events[0]["person"]
    assert events[0]["type"] == "realm_user" and events[0]["op"] == "add"
    # A member joins the role:members and role:fullmembers system groups.
    assert [(e["type"], e["op"], e["user_ids"]) for e in events[1:]] == [
        ("user_group", "add_members", [person["user_id"]])
    ] * 2
    assert person["full_name"] == "New Person" and person["profile_data"] == {}
    # client_gravatar (the default) gives null for a Gravatar the client can compute.
    assert person["avatar_url"] is None


async def test_user_created_without_client_gravatar(env: TestEnv) -> None:
    async def action() -> None:
        await env.create_user("new@example.com", "New Person")

    events = await verify_action(
        env, env.users["hamlet"], action, num_events=3, client_gravatar=False
    )
    assert events[0]["person"]["avatar_url"].startswith("https://secure.gravatar.com/")


async def test_bot_created(env: TestEnv) -> None:
    async def action() -> None:
        await env.create_user("x-bot@example.com", "X Bot", bot_owner=env.users["hamlet"])

    events = await verify_action(env, env.users["othello"], action, num_events=3)
    assert events[0]["person"]["is_bot"] is True
    assert events[0]["person"]["bot_owner_id"] == env.users["hamlet"].id


async def test_full_name_changed(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]

    async def action() -> None:
        assert_success(
            await env.client("iago").patch(f"/users/{hamlet.id}", {"full_name": "Prince Hamlet"})
        )

    events = await verify_action(env, hamlet, action, num_events=1)
    assert events[0]["person"] == {"user_id": hamlet.id, "full_name": "Prince Hamlet"}


async def test_role_changed(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    for role in (Role.ADMINISTRATOR, Role.GUEST, Role.MODERATOR, Role.OWNER, Role.MEMBER):

        async def action(role: Role = role) -> None:
            assert_success(
                await env.client("desdemona").patch(f"/users/{hamlet.id}", {"role": role})
            )

        # Seen both by the user whose role changed (identity keys) and by others.
        events = await verify_action(env, hamlet, action)
        assert events[0]["person"] == {"user_id": hamlet.id, "role": role}
        # Then the system groups' direct memberships follow the role.
        assert {(e["type"], e["op"]) for e in events[1:]} <= {
            ("user_group", "add_members"),
            ("user_group", "remove_members"),
        }
        assert len(events) > 1
        await verify_action(env, env.users["othello"], action, num_events=0)


async def test_deactivated_and_reactivated(env: TestEnv) -> None:
    othello = env.users["othello"]

    async def deactivate() -> None:
        assert_success(await env.client("iago").delete(f"/users/{othello.id}"))

    async def reactivate() -> None:
        assert_success(await env.client("iago").post(f"/users/{othello.id}/reactivate"))

    events = await verify_action(env, env.users["hamlet"], deactivate, num_events=1)
    # Feature level 222: an update with is_active, not a remove.
    assert events[0] == {
        "type": "realm_user",
        "op": "update",
        "id": events[0]["id"],
        "person": {"user_id": othello.id, "is_active": False},
    }
    events = await verify_action(env, env.users["hamlet"], reactivate, num_events=1)
    assert events[0]["person"] == {"user_id": othello.id, "is_active": True}


async def test_custom_profile_field_changed(env: TestEnv) -> None:
    async with env.services.db.write() as conn:
        result = await conn.execute(
            sa.insert(custom_profile_field).values(
                realm_id=env.realm.id, name="Title", field_type=1, order=1
            )
        )
        field_id = result.inserted_primary_key[0]  # type: ignore[index]
    hamlet = env.users["hamlet"]

    async def set_value() -> None:
        assert_success(
            await env.client("iago").patch(
                f"/users/{hamlet.id}", {"profile_data": [{"id": field_id, "value": "Prince"}]}
            )
        )

    async def clear_value() -> None:
        assert_success(
            await env.client("iago").patch(
                f"/users/{hamlet.id}", {"profile_data": [{"id": field_id, "value": ""}]}
            )
        )

    events = await verify_action(env, env.users["othello"], set_value, num_events=1)
    assert events[0]["person"]["custom_profile_field"] == {
        "id": field_id,
        "value": "Prince",
        "rendered_value": "<p>Prince</p>",
    }
    await verify_action(env, env.users["othello"], clear_value, num_events=1)


async def test_failed_action_sends_nothing(env: TestEnv) -> None:
    owner = env.users["desdemona"]

    async def action() -> None:
        # Rolled back (last owner): no event may escape.
        response = await env.client("desdemona").patch(f"/users/{owner.id}", {"role": Role.MEMBER})
        assert response.status_code == 400

    await verify_action(env, env.users["hamlet"], action, num_events=0)


async def test_events_are_published_only_after_commit(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    state = await register(env, env.users["othello"])

    class Boom(Exception):
        pass

    try:
        async with env.services.write() as tx:
            await notify_user_updated(tx, hamlet, full_name="Never")
            raise Boom
    except Boom:
        pass
    body = assert_success(
        await env.client("othello").get(
            "/events", {"queue_id": state["queue_id"], "dont_block": True}
        )
    )
    assert body["events"] == []


async def test_realm_user_events_filtered_by_event_types(env: TestEnv) -> None:
    count = 0

    async def action() -> None:
        nonlocal count
        count += 1
        await env.create_user(f"new{count}@example.com", "New Person")

    await verify_action(env, env.users["hamlet"], action, num_events=0, event_types=["realm"])
    await verify_action(env, env.users["hamlet"], action, num_events=1, event_types=["realm_user"])
