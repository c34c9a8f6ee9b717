"""Queues registered with ``all_public_streams``: every public stream message of the realm,
once, on both buses; never a private stream's; not for guests."""

from __future__ import annotations

from tests.events.verify import register
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import send_direct_message, send_stream_message


async def test_all_public_streams_queue_gets_unsubscribed_public_messages(
    env: TestEnv,
) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("hamlet", "Secret", invite_only=True)
    await env.subscribe("iago", "Scotland")
    await env.subscribe("hamlet", "Scotland")
    firehose = await register(
        env, env.users["iago"], event_types=["message"], all_public_streams=True
    )
    plain = await register(env, env.users["iago"], event_types=["message"])

    denmark = await send_stream_message(env, "hamlet", "Denmark", "to the realm")
    await send_stream_message(env, "hamlet", "Secret", "not for iago")
    scotland = await send_stream_message(env, "hamlet", "Scotland", "hi @**Iago**")
    await send_direct_message(env, "hamlet", ["othello"], "not for iago either")

    events = await env.events("iago", firehose)
    got = [(e["message"]["id"], e["flags"]) for e in events]
    # Not subscribed: no flags (no row); subscribed: one event with the row's flags.
    assert got == [(denmark, []), (scotland, ["mentioned"])]
    assert events[0]["message"]["display_recipient"] == "Denmark"
    # A queue without the option sees only what the user received.
    assert [e["message"]["id"] for e in await env.events("iago", plain)] == [scotland]


async def test_all_public_streams_queue_of_sender_gets_message_once(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    firehose = await register(
        env, env.users["hamlet"], event_types=["message"], all_public_streams=True
    )
    sent = await send_stream_message(env, "hamlet", "Denmark")
    events = await env.events("hamlet", firehose)
    assert [e["message"]["id"] for e in events] == [sent]


async def test_all_public_streams_respects_queue_narrow(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("hamlet", "Scotland")
    firehose = await register(
        env,
        env.users["othello"],
        event_types=["message"],
        all_public_streams=True,
        narrow=[["stream", "Scotland"]],
    )
    await send_stream_message(env, "hamlet", "Denmark")
    wanted = await send_stream_message(env, "hamlet", "Scotland")
    assert [e["message"]["id"] for e in await env.events("othello", firehose)] == [wanted]


async def test_deleted_firehose_queue_gets_nothing(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    firehose = await register(
        env, env.users["iago"], event_types=["message"], all_public_streams=True
    )
    assert_success(await env.client("iago").delete("/events", {"queue_id": firehose["queue_id"]}))
    await send_stream_message(env, "hamlet", "Denmark")
    assert_error(
        await env.client("iago").get(
            "/events", {"queue_id": firehose["queue_id"], "last_event_id": -1, "dont_block": True}
        ),
        "Bad event queue ID: " + firehose["queue_id"],
        code="BAD_EVENT_QUEUE_ID",
    )


async def test_guest_cannot_register_for_all_public_streams(env: TestEnv) -> None:
    assert_error(
        await env.client("polonius").post(
            "/register", {"event_types": ["message"], "all_public_streams": True}
        ),
        "User not authorized for this query",
    )
