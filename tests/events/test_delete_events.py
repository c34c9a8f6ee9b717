"""``delete_message`` events: who gets them, the bulk and per-message forms, and that
applying them to old /register state (unread_msgs, starred_messages, max_message_id,
recent_private_conversations) gives the new state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import sqlalchemy as sa

from hubbub.db.tables import subscription
from hubbub.events.queues import DELETE_FORM_MARK, QueueSpec, shape_event
from hubbub.queries.messages import READ, STARRED
from hubbub.register.message_delete_state import apply
from tests.events.verify import register, verify_action
from tests.group_settings_helpers import set_group_setting
from tests.helpers import TestEnv, add_user_message_flags, assert_success
from tests.messages_helpers import send_direct_message, send_stream_message

BULK: dict[str, Any] = {"client_capabilities": {"bulk_message_deletion": True}}


def _delete(env: TestEnv, user: str, message_id: int) -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        assert_success(await env.client(user).delete(f"/messages/{message_id}"))

    return action


def _delete_topic(
    env: TestEnv, user: str, stream_id: int, topic: str
) -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        body = assert_success(
            await env.client(user).post(f"/streams/{stream_id}/delete_topic", {"topic_name": topic})
        )
        assert body["complete"] is True

    return action


async def _set_flags(env: TestEnv, user: str, message_id: int, bits: int) -> None:
    async with env.services.db.write() as conn:
        await add_user_message_flags(
            conn, bits, user_id=env.users[user].id, message_ids=[message_id]
        )


async def test_stream_message_both_forms(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    older = await send_stream_message(env, "hamlet", "Denmark", "one", "castle")
    first = await send_stream_message(env, "hamlet", "Denmark", "two", "castle")
    second = await send_stream_message(env, "hamlet", "Denmark", "three", "castle")
    await _set_flags(env, "othello", first, STARRED)
    othello = env.users["othello"]

    events = await verify_action(env, othello, _delete(env, "iago", first), num_events=1, **BULK)
    assert events[0] == {
        "type": "delete_message",
        "message_ids": [first],
        "message_type": "stream",
        "stream_id": denmark.id,
        "topic": "castle",
        "id": 0,
    }
    # Without the capability: the per-message form, otherwise the same.
    events = await verify_action(env, othello, _delete(env, "iago", second), num_events=1)
    assert events[0] == {
        "type": "delete_message",
        "message_id": second,
        "message_type": "stream",
        "stream_id": denmark.id,
        "topic": "castle",
        "id": 0,
    }
    state = await register(env, othello)
    assert state["max_message_id"] == older
    assert state["starred_messages"] == []
    assert [e["unread_message_ids"] for e in state["unread_msgs"]["streams"]] == [[older]]


async def test_topic_deletion_bulk_and_per_message(env: TestEnv) -> None:
    denmark = await env.subscribe("iago", "Denmark")
    await env.subscribe("othello", "Denmark")
    kept = await send_stream_message(env, "iago", "Denmark", "stay", "other")
    ids = [await send_stream_message(env, "iago", "Denmark", str(n), "castle") for n in range(3)]
    othello = env.users["othello"]
    await _set_flags(env, "othello", ids[1], STARRED)

    # Per-message form: one event per message, in id order.
    events = await verify_action(
        env, othello, _delete_topic(env, "iago", denmark.id, "castle"), num_events=3
    )
    assert [e["message_id"] for e in events] == ids
    assert all("message_ids" not in e and e["topic"] == "castle" for e in events)

    more = [await send_stream_message(env, "iago", "Denmark", str(n), "Castle") for n in range(3)]
    events = await verify_action(
        env, othello, _delete_topic(env, "iago", denmark.id, "CASTLE"), num_events=1, **BULK
    )
    assert events[0]["message_ids"] == more and events[0]["topic"] == "Castle"
    state = await register(env, othello)
    assert state["max_message_id"] == kept
    assert state["unread_msgs"]["count"] == 1


async def test_muted_stream_count(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    await env.subscribe("hamlet", "Norway")
    await env.subscribe("othello", "Norway")
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(subscription)
            .where(
                subscription.c.stream_id == denmark.id,
                subscription.c.user_profile_id == env.users["othello"].id,
            )
            .values(is_muted=True)
        )
    muted = await send_stream_message(env, "hamlet", "Denmark", "quiet", "t")
    await send_stream_message(env, "hamlet", "Denmark", "quiet too", "t")
    loud = await send_stream_message(env, "hamlet", "Norway", "@**Othello**", "t")
    await send_stream_message(env, "hamlet", "Norway", "later", "t")
    othello = env.users["othello"]
    await verify_action(env, othello, _delete(env, "iago", muted), **BULK)
    # A mention leaves ``mentions`` too.
    await verify_action(env, othello, _delete(env, "iago", loud))
    assert (await register(env, othello))["unread_msgs"]["mentions"] == []


async def test_direct_messages_and_recent_conversations(env: TestEnv) -> None:
    hamlet, othello = env.users["hamlet"], env.users["othello"]
    # Senders may delete their own messages.
    await set_group_setting(env, "can_delete_own_message_group", "role:everyone")
    zero = await send_direct_message(env, "othello", ["hamlet"], "zero")
    earlier = await send_direct_message(env, "othello", ["hamlet"], "one")
    newest = await send_direct_message(env, "othello", ["hamlet"], "two")
    group_old = await send_direct_message(env, "othello", ["hamlet", "iago"], "g1")
    group_new = await send_direct_message(env, "othello", ["hamlet", "iago"], "g2")

    # Deleting a conversation's newest message: its newest remaining (still unread for
    # hamlet, so known to his state) takes its place.
    events = await verify_action(env, hamlet, _delete(env, "othello", newest), num_events=1)
    assert events[0] == {
        "type": "delete_message",
        "message_id": newest,
        "message_type": "private",
        "id": 0,
    }
    events = await verify_action(env, hamlet, _delete(env, "othello", group_new), **BULK)
    assert events[0]["message_ids"] == [group_new] and "topic" not in events[0]
    state = await register(env, hamlet)
    assert state["recent_private_conversations"] == [
        {"max_message_id": group_old, "user_ids": sorted([othello.id, env.users["iago"].id])},
        {"max_message_id": earlier, "user_ids": [othello.id]},
    ]
    assert state["max_message_id"] == group_old
    # Deleting an older message leaves both values alone; the sender read and starred
    # its copy, and its state changes as well.
    await _set_flags(env, "othello", zero, STARRED | READ)
    await verify_action(env, othello, _delete(env, "othello", zero), **BULK)
    assert (await register(env, hamlet))["recent_private_conversations"][1]["max_message_id"] == (
        earlier
    )


async def test_who_hears_of_a_deletion(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    doomed = await send_stream_message(env, "hamlet", "Denmark", "x", "t")
    # iago subscribes after the message: no row, but the message is in the
    # stream's history he can read, so he hears of it (as Zulip tells subscribers).
    await env.subscribe("iago", "Denmark")
    # othello leaves but keeps his row, so his state still lists the message.
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(subscription)
            .where(
                subscription.c.stream_id == denmark.id,
                subscription.c.user_profile_id == env.users["othello"].id,
            )
            .values(active=False)
        )
    queues = {
        name: await register(env, env.users[name], event_types=["delete_message"], **BULK)
        for name in ("hamlet", "othello", "iago", "shiva")
    }
    assert_success(await env.client("desdemona").delete(f"/messages/{doomed}"))
    heard = {name: await env.events(name, state) for name, state in queues.items()}
    assert {name for name, events in heard.items() if events} == {"hamlet", "othello", "iago"}
    assert heard["iago"][0]["message_ids"] == [doomed]


async def test_protected_history_tells_only_those_who_received(env: TestEnv) -> None:
    await set_group_setting(env, "can_delete_own_message_group", "role:everyone")
    await env.subscribe("hamlet", "Secret", invite_only=True)
    before = await send_stream_message(env, "hamlet", "Secret", "x", "hidden topic")
    await env.subscribe("othello", "Secret")
    after = await send_stream_message(env, "hamlet", "Secret", "y", "hidden topic")
    queues = {
        name: await register(env, env.users[name], event_types=["delete_message"])
        for name in ("hamlet", "othello")
    }
    assert_success(await env.client("hamlet").delete(f"/messages/{before}"))
    assert_success(await env.client("hamlet").delete(f"/messages/{after}"))
    assert [e["message_id"] for e in await env.events("hamlet", queues["hamlet"])] == [
        before,
        after,
    ]
    # othello joined after the first message and cannot read the stream's older history:
    # hearing of its deletion would only leak its topic.
    assert [e["message_id"] for e in await env.events("othello", queues["othello"])] == [after]


def test_queues_keep_one_form() -> None:
    def spec(**capabilities: bool) -> QueueSpec:
        return QueueSpec(
            queue_id="q",
            user_id=1,
            realm_id=1,
            event_types=None,
            narrow=[["stream", "Denmark"]],
            client_capabilities=capabilities,
        )

    bulk = {"type": "delete_message", "message_ids": [5], DELETE_FORM_MARK: "bulk"}
    single = {"type": "delete_message", "message_id": 5, DELETE_FORM_MARK: "single"}
    modern, legacy = spec(bulk_message_deletion=True), spec()
    # The mark never reaches a client, and a narrowed queue still hears of deletions.
    assert shape_event(bulk, modern) == {"type": "delete_message", "message_ids": [5]}
    assert shape_event(single, modern) is None
    assert shape_event(bulk, legacy) is None
    assert shape_event(single, legacy) == {"type": "delete_message", "message_id": 5}
    assert shape_event(bulk, spec(bulk_message_deletion=False)) is None


def test_state_when_the_newest_remaining_message_is_unknown() -> None:
    # Only the event and the state are known: a deleted newest message whose successor the
    # state does not list leaves the value as it was (the next /register corrects it).
    state: dict[str, Any] = {
        "user_id": 1,
        "max_message_id": 9,
        "starred_messages": [4, 9],
        "recent_private_conversations": [
            {"max_message_id": 9, "user_ids": [2]},
            {"max_message_id": 7, "user_ids": [3]},
        ],
    }
    event = {"type": "delete_message", "message_id": 9, "message_type": "private"}
    assert apply(state, event) is True
    assert state["starred_messages"] == [4]
    assert state["recent_private_conversations"][0] == {"max_message_id": 9, "user_ids": [2]}
    # The newest message the state still knows of.
    assert state["max_message_id"] == 7
    assert apply(state, {"type": "message"}) is False
