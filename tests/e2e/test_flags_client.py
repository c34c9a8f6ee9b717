"""Message flags, marking read and read receipts through the official ``zulip`` client,
against a real ``hubbub serve``."""

from __future__ import annotations

from typing import Any

import zulip

from tests.e2e.client import assert_error, assert_ok


def _unread_count(client: zulip.Client) -> int:
    state = assert_ok(client.register(event_types=["message", "update_message_flags"]))
    return int(state["unread_msgs"]["count"])


def _send(client: zulip.Client, topic: str, content: str = "hello") -> int:
    message = {"type": "stream", "to": "engineering", "topic": topic, "content": content}
    return int(assert_ok(client.send_message(message))["id"])


def test_flags_and_reading(owner_client: zulip.Client, member_client: zulip.Client) -> None:
    assert_ok(
        owner_client.add_subscriptions(
            streams=[{"name": "engineering"}], principals=["cordelia@example.com"]
        )
    )
    stream_id = assert_ok(member_client.get_stream_id("engineering"))["stream_id"]
    ids = [_send(owner_client, topic) for topic in ("builds", "builds", "deploys", "lunch")]
    assert _unread_count(member_client) == 4

    # Star and read by ids; the events reach the member's queue.
    queue = assert_ok(member_client.register(event_types=["update_message_flags"]))
    flags: dict[str, Any] = {"messages": ids[:1], "op": "add", "flag": "starred"}
    assert assert_ok(member_client.update_message_flags(flags))["messages"] == ids[:1]
    assert_ok(member_client.update_message_flags({**flags, "flag": "read"}))
    events = assert_ok(
        member_client.get_events(queue_id=queue["queue_id"], last_event_id=-1, dont_block=True)
    )["events"]
    assert [(e["flag"], e["messages"]) for e in events] == [("starred", ids[:1]), ("read", ids[:1])]
    raw = assert_ok(member_client.get_raw_message(ids[0]))
    assert raw["message"]["flags"] == ["read", "starred"]
    assert_error(
        member_client.update_message_flags({**flags, "flag": "mentioned"}),
        "BAD_REQUEST",
        "Flag not editable: 'mentioned'",
    )

    # Read receipts: the member has read the first message; the sender is never listed.
    member_id = assert_ok(member_client.get_profile())["user_id"]
    receipts = assert_ok(owner_client.call_endpoint(f"messages/{ids[0]}/read_receipts", "GET"))
    assert receipts["user_ids"] == [member_id]

    # A topic, then the narrow endpoint, then a stream, then everything.
    assert_ok(member_client.mark_topic_as_read(stream_id, "builds"))
    assert _unread_count(member_client) == 2
    narrow = assert_ok(
        member_client.call_endpoint(
            "messages/flags/narrow",
            "POST",
            {
                "anchor": "first_unread",
                "num_before": 0,
                "num_after": 10,
                "narrow": [{"operator": "topic", "operand": "deploys"}],
                "op": "add",
                "flag": "read",
            },
        )
    )
    assert (narrow["processed_count"], narrow["updated_count"]) == (1, 1)
    assert narrow["first_processed_id"] == narrow["last_processed_id"] == ids[2]
    assert_ok(member_client.mark_stream_as_read(stream_id))
    assert _unread_count(member_client) == 0
    assert_ok(member_client.update_message_flags({"messages": ids, "op": "remove", "flag": "read"}))
    assert _unread_count(member_client) == 4
    assert assert_ok(member_client.mark_all_as_read())["complete"] is True
    assert _unread_count(member_client) == 0
    assert_error(member_client.mark_stream_as_read(10**6), "BAD_REQUEST", "Invalid stream ID")
