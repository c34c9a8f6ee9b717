"""Emoji reactions and submessages through the official ``zulip`` client, against a real
``hubbub serve``."""

from __future__ import annotations

import json

import zulip

from tests.e2e.client import assert_error, assert_ok


def test_reactions_and_submessages(owner_client: zulip.Client, member_client: zulip.Client) -> None:
    assert_ok(
        owner_client.add_subscriptions(
            streams=[{"name": "engineering"}], principals=["cordelia@example.com"]
        )
    )
    member_id = assert_ok(member_client.get_profile())["user_id"]
    queue = assert_ok(owner_client.register(event_types=["reaction", "submessage"]))
    sent = assert_ok(
        owner_client.send_message(
            {"type": "stream", "to": "engineering", "topic": "lunch", "content": "/poll Lunch?"}
        )
    )
    message_id = sent["id"]

    # By name only (the client also sends message_id in the body, which is ignored).
    assert_ok(member_client.add_reaction({"message_id": message_id, "emoji_name": "octopus"}))
    assert_ok(
        owner_client.add_reaction(
            {
                "message_id": message_id,
                "emoji_name": "zulip",
                "emoji_code": "zulip",
                "reaction_type": "zulip_extra_emoji",
            }
        )
    )
    assert_error(
        member_client.add_reaction({"message_id": message_id, "emoji_name": "octopus"}),
        "REACTION_ALREADY_EXISTS",
        "Reaction already exists.",
    )
    assert_error(
        member_client.add_reaction({"message_id": message_id, "emoji_name": "no_such_emoji"}),
        "BAD_REQUEST",
        "Emoji 'no_such_emoji' does not exist",
    )

    page = assert_ok(
        member_client.get_messages(
            {
                "anchor": "newest",
                "num_before": 5,
                "num_after": 0,
                "narrow": [{"operator": "stream", "operand": "engineering"}],
            }
        )
    )
    [msg] = page["messages"]
    assert [
        (r["emoji_name"], r["emoji_code"], r["reaction_type"], r["user_id"])
        for r in msg["reactions"]
    ] == [
        ("octopus", "1f419", "unicode_emoji", member_id),
        ("zulip", "zulip", "zulip_extra_emoji", msg["sender_id"]),
    ]
    assert msg["reactions"][0]["user"]["email"] == "cordelia@example.com"

    assert_ok(member_client.remove_reaction({"message_id": message_id, "emoji_name": "octopus"}))
    assert_error(
        member_client.remove_reaction({"message_id": message_id, "emoji_name": "octopus"}),
        "REACTION_DOES_NOT_EXIST",
        "Reaction doesn't exist.",
    )

    # Submessages: the sender attaches the widget, then any reader may vote.
    vote = json.dumps({"type": "vote", "key": "canned,0", "vote": 1})
    assert_error(
        member_client.call_endpoint(
            url="submessage",
            method="POST",
            request={"message_id": message_id, "msg_type": "widget", "content": vote},
        ),
        "BAD_REQUEST",
        "You cannot attach a submessage to this message.",
    )
    widget = json.dumps({"widget_type": "poll", "extra_data": {"question": "Lunch?"}})
    assert_ok(
        owner_client.call_endpoint(
            url="submessage",
            method="POST",
            request={"message_id": message_id, "msg_type": "widget", "content": widget},
        )
    )
    assert_ok(
        member_client.call_endpoint(
            url="submessage",
            method="POST",
            request={"message_id": message_id, "msg_type": "widget", "content": vote},
        )
    )
    fetched = assert_ok(member_client.get_raw_message(message_id))["message"]
    assert [(s["sender_id"], s["content"]) for s in fetched["submessages"]] == [
        (msg["sender_id"], widget),
        (member_id, vote),
    ]
    assert fetched["reactions"][0]["emoji_name"] == "zulip"

    events = assert_ok(
        owner_client.get_events(queue_id=queue["queue_id"], last_event_id=-1, dont_block=True)
    )["events"]
    assert [(e["type"], e.get("op")) for e in events] == [
        ("reaction", "add"),
        ("reaction", "add"),
        ("reaction", "remove"),
        ("submessage", None),
        ("submessage", None),
    ]
    assert events[0]["user"]["user_id"] == member_id
    assert events[4]["content"] == vote
