"""Sending and reading messages, typing and rendering through the official ``zulip``
client, against a real ``hubbub serve``."""

from __future__ import annotations

import zulip

from tests.e2e.client import assert_ok


def test_send_read_type_render(owner_client: zulip.Client, member_client: zulip.Client) -> None:
    assert_ok(
        owner_client.add_subscriptions(
            streams=[{"name": "engineering"}], principals=["cordelia@example.com"]
        )
    )
    queue = assert_ok(member_client.register(event_types=["message", "typing"]))
    sent = assert_ok(
        owner_client.send_message(
            {"type": "stream", "to": "engineering", "topic": "builds", "content": "**green**"}
        )
    )
    raw = assert_ok(member_client.get_raw_message(sent["id"]))
    assert raw["raw_content"] == "**green**"
    assert raw["message"]["content"] == "<p><strong>green</strong></p>"
    assert raw["message"]["flags"] == []

    member_id = assert_ok(member_client.get_profile())["user_id"]
    dm = assert_ok(
        owner_client.send_message({"type": "private", "to": [member_id], "content": "psst"})
    )
    fetched = assert_ok(
        member_client.call_endpoint(
            url=f"messages/{dm['id']}", method="GET", request={"apply_markdown": "false"}
        )
    )
    assert fetched["message"]["content"] == "psst"
    assert fetched["message"]["type"] == "private"

    assert_ok(owner_client.set_typing_status({"op": "start", "to": [member_id]}))
    events = assert_ok(
        member_client.get_events(queue_id=queue["queue_id"], last_event_id=-1, dont_block=True)
    )["events"]
    assert [e["type"] for e in events] == ["message", "message", "typing"]
    assert events[0]["message"]["id"] == sent["id"]

    rendered = assert_ok(owner_client.render_message({"content": "*hi*"}))
    assert rendered["rendered"] == "<p><em>hi</em></p>"
    state = assert_ok(member_client.register(event_types=["message", "update_message_flags"]))
    assert state["unread_msgs"]["count"] == 2
    assert state["max_message_id"] == dm["id"]

    # Fetching: a stream+topic narrow, a search with highlighting, and matches_narrow.
    assert_ok(
        owner_client.send_message(
            {"type": "stream", "to": "engineering", "topic": "deploys", "content": "ship it"}
        )
    )
    page = assert_ok(
        member_client.get_messages(
            {
                "anchor": "newest",
                "num_before": 10,
                "num_after": 0,
                "narrow": [
                    {"operator": "stream", "operand": "engineering"},
                    {"operator": "topic", "operand": "builds"},
                ],
            }
        )
    )
    assert [m["id"] for m in page["messages"]] == [sent["id"]]
    assert page["found_newest"] is True and page["found_oldest"] is True
    found = assert_ok(
        member_client.get_messages(
            {
                "anchor": "newest",
                "num_before": 10,
                "num_after": 0,
                "narrow": [{"operator": "search", "operand": "ship"}],
            }
        )
    )["messages"]
    assert len(found) == 1 and '<span class="highlight">ship</span>' in found[0]["match_content"]
    matches = assert_ok(
        member_client.call_endpoint(
            url="messages/matches_narrow",
            method="GET",
            request={
                "msg_ids": [sent["id"], dm["id"]],
                "narrow": [{"operator": "is", "operand": "dm"}],
            },
        )
    )["messages"]
    assert list(matches) == [str(dm["id"])]

    # The stream's topics, newest first.
    stream_id = assert_ok(member_client.get_stream_id("engineering"))["stream_id"]
    topics = assert_ok(member_client.get_stream_topics(stream_id))["topics"]
    assert [t["name"] for t in topics] == ["deploys", "builds"]
    assert topics[1]["max_id"] == sent["id"]
