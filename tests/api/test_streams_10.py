"""Streams as Zulip 10.2 has them: creators, group-valued permissions, archiving and
recent activity (feature levels 254-357)."""

from __future__ import annotations

from typing import Any

import orjson
import sqlalchemy as sa

from hubbub.actions.stream_activity import RECENT_ACTIVITY_DAYS, do_mark_inactive_streams
from hubbub.db.tables import stream as stream_table
from hubbub.queries.stream_permissions import stream_setting_values
from hubbub.queries.streams import get_stream_by_id
from hubbub.queries.user_groups import get_group_id_by_name
from tests.events.verify import verify_action
from tests.helpers import TestEnv, assert_error, assert_success

CANNOT_ADMINISTER = "You do not have permission to administer this channel."
CANNOT_POST = "You do not have permission to post in this channel."


async def _group(env: TestEnv, name: str) -> int:
    async with env.services.db.read() as conn:
        return await get_group_id_by_name(conn, env.realm.id, name)


async def _values(env: TestEnv, stream_id: int) -> dict[str, Any]:
    async with env.services.db.read() as conn:
        found = await get_stream_by_id(conn, env.realm.id, stream_id)
    assert found is not None
    return dict(stream_setting_values(found))


async def _create(env: TestEnv, user: str, name: str, **params: Any) -> dict[str, Any]:
    body = {"subscriptions": [{"name": name}], **params}
    assert_success(await env.client(user).post("/users/me/subscriptions", body))
    streams = assert_success(await env.client("iago").get("/streams", {"include_all": True}))
    return next(s for s in streams["streams"] if s["name"] == name)


def _post(env: TestEnv, user: str, stream: str | int) -> Any:
    return env.client(user).post(
        "/messages", {"type": "stream", "to": stream, "topic": "t", "content": "hi"}
    )


async def test_new_stream_has_its_creator_and_defaults(env: TestEnv) -> None:
    created = await _create(env, "hamlet", "Fresh")
    assert created["creator_id"] == env.users["hamlet"].id
    assert created["is_archived"] is False and created["is_recently_active"] is True
    nobody = await _group(env, "role:nobody")
    assert created["can_administer_channel_group"] == {
        "direct_members": [env.users["hamlet"].id],
        "direct_subgroups": [],
    }
    assert created["can_add_subscribers_group"] == nobody
    assert created["can_subscribe_group"] == nobody
    assert created["can_send_message_group"] == await _group(env, "role:everyone")
    assert created["can_remove_subscribers_group"] == await _group(env, "role:administrators")
    assert created["stream_post_policy"] == 1
    # The creator administers it: they may rename it; another member may not.
    assert_success(
        await env.client("hamlet").patch(
            f"/streams/{created['stream_id']}", {"new_name": "Fresher"}
        )
    )
    assert_error(
        await env.client("othello").patch(f"/streams/{created['stream_id']}", {"description": "x"}),
        CANNOT_ADMINISTER,
    )
    # A stream created before creators were recorded has none (migration 0027).
    old = await env.subscribe("hamlet", "Old")
    body = assert_success(await env.client("hamlet").get(f"/streams/{old.id}"))
    assert body["stream"]["creator_id"] is None


async def test_create_with_group_settings(env: TestEnv) -> None:
    members = await _group(env, "role:members")
    moderators = await _group(env, "role:moderators")
    created = await _create(
        env,
        "iago",
        "Configured",
        can_send_message_group=orjson.dumps(
            {"direct_members": [env.users["othello"].id], "direct_subgroups": [moderators]}
        ).decode(),
        can_add_subscribers_group=members,
        can_administer_channel_group=moderators,
    )
    assert created["can_send_message_group"] == {
        "direct_members": [env.users["othello"].id],
        "direct_subgroups": [moderators],
    }
    # A group the old policy cannot express reads as "moderators" (feature level 333).
    assert created["stream_post_policy"] == 4
    assert created["can_add_subscribers_group"] == members
    assert created["can_administer_channel_group"] == moderators
    # The legacy parameter names a system group.
    legacy = await _create(env, "iago", "Legacy", stream_post_policy=2)
    assert legacy["can_send_message_group"] == await _group(env, "role:administrators")
    assert legacy["stream_post_policy"] == 2 and legacy["is_announcement_only"] is True
    # Each setting's configuration is enforced.
    assert_error(
        await env.client("iago").post(
            "/users/me/subscriptions",
            {
                "subscriptions": [{"name": "Bad"}],
                "can_add_subscribers_group": await _group(env, "role:everyone"),
            },
        ),
        "'can_add_subscribers_group' setting cannot be set to 'role:everyone' group.",
    )


async def test_can_send_message_group(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    value = {"direct_members": [env.users["othello"].id], "direct_subgroups": []}
    assert_success(
        await env.client("iago").patch(
            f"/streams/{denmark.id}", {"can_send_message_group": {"new": value}}
        )
    )
    assert_success(await _post(env, "othello", "Denmark"))
    assert_error(await _post(env, "hamlet", "Denmark"), CANNOT_POST)
    assert_error(await _post(env, "iago", denmark.id), CANNOT_POST)


async def test_group_setting_update_with_old_value(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    everyone = await _group(env, "role:everyone")
    members = await _group(env, "role:members")
    iago = env.client("iago")
    path = f"/streams/{denmark.id}"
    assert_error(
        await iago.patch(path, {"can_send_message_group": {"new": members, "old": members}}),
        "'old' value does not match the expected value.",
    )
    assert (await _values(env, denmark.id))["can_send_message_group"] == everyone
    assert_success(
        await iago.patch(path, {"can_send_message_group": {"new": members, "old": everyone}})
    )
    assert (await _values(env, denmark.id))["can_send_message_group"] == members
    body = assert_success(await env.client("hamlet").get(path))
    # Members (not expressible as a policy) read as moderators for old clients.
    assert body["stream"]["stream_post_policy"] == 4


async def test_channel_administrators(env: TestEnv) -> None:
    secret = await env.subscribe("othello", "Secret", invite_only=True)
    value = {"direct_members": [env.users["othello"].id], "direct_subgroups": []}
    assert_success(
        await env.client("iago").patch(
            f"/streams/{secret.id}", {"can_administer_channel_group": {"new": value}}
        )
    )
    othello = env.client("othello")
    assert_success(await othello.patch(f"/streams/{secret.id}", {"description": "Ours"}))
    # Administering a stream does not make one an organization administrator.
    assert_error(
        await othello.patch(f"/streams/{secret.id}", {"is_default_stream": False}),
        "Must be an organization administrator",
        code="UNAUTHORIZED_PRINCIPAL",
    )
    # Others who cannot see the private stream are not told it exists.
    assert_error(
        await env.client("hamlet").patch(f"/streams/{secret.id}", {"description": "x"}),
        "Invalid stream ID",
    )
    # A stream administrator may archive it.
    assert_success(await othello.delete(f"/streams/{secret.id}"))


async def test_add_subscribers_and_subscribe_groups(env: TestEnv) -> None:
    secret = await env.subscribe("othello", "Secret", invite_only=True)
    hamlet = env.client("hamlet")
    subscribe_self = {"subscriptions": [{"name": "Secret"}]}
    assert_error(
        await hamlet.post("/users/me/subscriptions", subscribe_self),
        "Unable to access stream (Secret).",
    )
    only_hamlet = {"direct_members": [env.users["hamlet"].id], "direct_subgroups": []}
    assert_success(
        await env.client("othello").post(
            "/users/me/subscriptions",
            {"subscriptions": [{"name": "Other"}]},
        )
    )
    assert_success(
        await env.client("iago").patch(
            f"/streams/{secret.id}", {"can_subscribe_group": {"new": only_hamlet}}
        )
    )
    assert_success(await hamlet.post("/users/me/subscriptions", subscribe_self))
    # Subscribing others needs can_add_subscribers_group (or the realm's permission on a
    # stream one can read).
    shiva = env.users["shiva"].id
    add_shiva = {"subscriptions": [{"name": "Secret"}], "principals": [shiva]}
    await env.subscribe("desdemona", "Secret")
    assert_success(
        await env.client("iago").patch(
            f"/streams/{secret.id}",
            {"can_subscribe_group": {"new": await _group(env, "role:nobody")}},
        )
    )
    assert_success(
        await env.client("iago").patch(
            f"/streams/{secret.id}", {"can_add_subscribers_group": {"new": only_hamlet}}
        )
    )
    body = assert_success(await hamlet.post("/users/me/subscriptions", add_shiva))
    assert body["subscribed"] == {"shiva@example.com": ["Secret"]}


async def test_remove_subscribers_group(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    remove = {"subscriptions": ["Denmark"], "principals": [env.users["othello"].id]}
    assert_error(
        await env.client("hamlet").delete("/users/me/subscriptions", remove),
        "Insufficient permission",
    )
    value = {"direct_members": [env.users["hamlet"].id], "direct_subgroups": []}
    assert_success(
        await env.client("iago").patch(
            f"/streams/{denmark.id}", {"can_remove_subscribers_group": {"new": value}}
        )
    )
    body = assert_success(await env.client("hamlet").delete("/users/me/subscriptions", remove))
    assert body["removed"] == ["Denmark"]


async def test_archived_streams(env: TestEnv) -> None:
    verona = await env.subscribe("hamlet", "Verona")
    assert_success(await _post(env, "hamlet", "Verona"))
    assert_success(await env.client("iago").delete(f"/streams/{verona.id}"))
    # Sending is refused, by id and by name.
    assert_error(
        await _post(env, "hamlet", verona.id), "Not authorized to send to channel 'Verona'"
    )
    assert_error(await _post(env, "hamlet", "Verona"), "Not authorized to send to channel 'Verona'")
    hamlet = env.client("hamlet")
    names = [s["name"] for s in assert_success(await hamlet.get("/streams"))["streams"]]
    assert "Verona" not in names
    listed = assert_success(await hamlet.get("/streams", {"exclude_archived": False}))["streams"]
    archived = next(s for s in listed if s["name"] == "Verona")
    assert archived["is_archived"] is True
    # /register: archived streams only for clients that can show them.
    plain = assert_success(
        await hamlet.post("/register", {"fetch_event_types": ["subscription", "stream"]})
    )
    assert all(s["stream_id"] != verona.id for s in plain["subscriptions"] + plain["streams"])
    capable = assert_success(
        await hamlet.post(
            "/register",
            {
                "fetch_event_types": ["subscription", "stream"],
                "client_capabilities": {"archived_channels": True},
            },
        )
    )
    sub = next(s for s in capable["subscriptions"] if s["stream_id"] == verona.id)
    assert sub["is_archived"] is True
    assert any(s["stream_id"] == verona.id for s in capable["streams"])


async def test_archiving_events_follow_the_capability(env: TestEnv) -> None:
    lobby = await env.subscribe("hamlet", "Lobby")
    verona = await env.subscribe("hamlet", "Verona")
    capable: dict[str, Any] = {"client_capabilities": {"archived_channels": True}}
    events = await verify_action(
        env,
        env.users["hamlet"],
        lambda: env.client("iago").delete(f"/streams/{verona.id}"),
        **capable,
    )
    assert [(e["type"], e["op"], e.get("property")) for e in events] == [
        ("stream", "update", "is_archived")
    ]
    assert events[0]["value"] is True
    events = await verify_action(
        env, env.users["hamlet"], lambda: env.client("iago").delete(f"/streams/{lobby.id}")
    )
    assert [(e["type"], e["op"]) for e in events] == [("stream", "delete")]
    # Feature level 343: stream_ids, beside the deprecated list of ids.
    assert events[0]["stream_ids"] == [lobby.id]
    assert events[0]["streams"] == [{"stream_id": lobby.id}]


async def test_get_streams_sources(env: TestEnv) -> None:
    secret = await env.subscribe("othello", "Secret", invite_only=True)
    await env.subscribe("hamlet", "Denmark")
    hamlet = env.client("hamlet")

    async def names(params: dict[str, Any]) -> list[str]:
        body = assert_success(await hamlet.get("/streams", params))
        return [s["name"] for s in body["streams"]]

    # include_all for anyone: the streams they can see (feature level 356).
    assert await names({"include_all": True}) == ["Denmark"]
    assert await names({"include_can_access_content": True, "include_public": False}) == ["Denmark"]
    only_hamlet = {"direct_members": [env.users["hamlet"].id], "direct_subgroups": []}
    assert_success(
        await env.client("iago").patch(
            f"/streams/{secret.id}", {"can_subscribe_group": {"new": only_hamlet}}
        )
    )
    assert await names(
        {"include_can_access_content": True, "include_public": False, "include_subscribed": False}
    ) == ["Denmark", "Secret"]
    # The name before feature level 356 stays for administrators.
    assert_error(
        await hamlet.get("/streams", {"include_all_active": True}),
        "User not authorized for this query",
    )


async def test_recently_active(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    # An old message (the first message id is set once, without an event).
    assert_success(await _post(env, "hamlet", "Denmark"))
    now = env.services.clock.now() + (RECENT_ACTIVITY_DAYS + 1) * 86400
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(stream_table)
            .where(stream_table.c.id == denmark.id)
            .values(date_created=now - (RECENT_ACTIVITY_DAYS + 2) * 86400)
        )

    async def mark() -> None:
        async with env.services.write() as tx:
            assert await do_mark_inactive_streams(tx, env.realm, now) == [denmark.id]

    events = await verify_action(env, env.users["hamlet"], mark)
    assert [(e["property"], e["value"]) for e in events] == [("is_recently_active", False)]
    # A message makes it recently active again.
    events = await verify_action(
        env, env.users["othello"], lambda: _post(env, "hamlet", "Denmark"), event_types=["stream"]
    )
    assert [(e["property"], e["value"]) for e in events] == [("is_recently_active", True)]
