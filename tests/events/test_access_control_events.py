"""Events never tell anyone about a message they may not read: after messages in every
kind of conversation are sent, reacted to, starred, edited, given submessages and deleted,
each actor's queue (and an administrator's ``all_public_streams`` queue) holds events only
about messages that actor may read, and message events for exactly what they received.
On both buses."""

from __future__ import annotations

from typing import Any

from tests.access_table import (
    MEMBERS,
    OBJECTS,
    READERS,
    READERS_LATER,
    RECEIVED_LATER,
    World,
    build_world,
    event_message_ids,
)
from tests.group_settings_helpers import set_group_setting
from tests.helpers import TestEnv, assert_success


async def _drain(world: World, actor: str) -> list[dict[str, Any]]:
    owner = "iago" if actor == "iago-firehose" else actor
    body = assert_success(
        await world.client(owner).get(
            "/events",
            {"queue_id": world.queues[actor], "last_event_id": -1, "dont_block": True},
        )
    )
    return body["events"]  # type: ignore[no-any-return]


async def test_events_reach_only_readers(env: TestEnv) -> None:
    world = await build_world(env)
    hamlet = env.client("hamlet")
    # Let senders delete their own messages, direct messages included.
    await set_group_setting(env, "can_delete_own_message_group", "role:everyone")
    later: dict[int, str] = {}  # message sent after the late subscriptions -> object
    for obj in OBJECTS:
        message_id = world.ids[obj]
        path = f"/messages/{message_id}"
        assert_success(await hamlet.post(f"{path}/reactions", {"emoji_name": "octopus"}))
        assert_success(await hamlet.patch(path, {"content": f"edited {obj}"}))
        params = {"message_id": message_id, "msg_type": "widget", "content": "{}"}
        assert_success(await hamlet.post("/submessage", params))
        for reader in READERS[obj]:
            star = {"messages": [message_id], "op": "add", "flag": "starred"}
            assert_success(await env.client(reader).post("/messages/flags", star))
        fresh = await world.send(obj)
        later[fresh] = obj
        assert_success(await hamlet.delete(f"/messages/{fresh}"))

    def readable(actor: str) -> set[int]:
        return world.readable(actor) | {i for i, o in later.items() if actor in READERS_LATER[o]}

    def received(actor: str) -> set[int]:
        return world.received(actor) | {i for i, o in later.items() if actor in RECEIVED_LATER[o]}

    leaks = []
    for actor in MEMBERS:
        events = await _drain(world, actor)
        for event in events:
            extra = event_message_ids(event) - readable(actor)
            if extra:
                leaks.append(f"{actor} told of {sorted(extra)} by {event}")
        sent = {e["message"]["id"] for e in events if e["type"] == "message"}
        assert sent == received(actor), actor
    assert not leaks, "\n".join(leaks)

    # The firehose adds every public and web-public message, nothing private.
    firehose = await _drain(world, "iago-firehose")
    open_streams = ("public", "web_public")
    public = {world.ids[o] for o in open_streams} | {
        i for i, o in later.items() if o in open_streams
    }
    sent = {e["message"]["id"] for e in firehose if e["type"] == "message"}
    assert sent == received("iago") | public
    for event in firehose:
        assert event_message_ids(event) <= readable("iago"), event

    # The sender heard of everything done to every message.
    kinds = {(e["type"], e.get("op")) for e in await _drain(world, "hamlet")}
    assert {("reaction", "add"), ("update_message", None), ("submessage", None)} <= kinds
    assert ("delete_message", None) in kinds
    # A user of another organization hears nothing of this one.
    assert [e for e in await _drain(world, "zoe") if e["type"] != "heartbeat"] == []
