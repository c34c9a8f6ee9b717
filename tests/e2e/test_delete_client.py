"""Deleting messages and topics through the official ``zulip`` client, against a real
``hubbub serve``."""

from __future__ import annotations

import json
from typing import Any

import zulip

from tests.e2e.client import assert_error, assert_ok


def _events(client: zulip.Client, queue: dict[str, Any]) -> list[dict[str, Any]]:
    body = assert_ok(
        client.get_events(queue_id=queue["queue_id"], last_event_id=-1, dont_block=True)
    )
    return list(body["events"])


def test_delete_message_and_topic(owner_client: zulip.Client, member_client: zulip.Client) -> None:
    assert_ok(
        owner_client.add_subscriptions(
            streams=[{"name": "engineering"}], principals=["cordelia@example.com"]
        )
    )
    stream_id = assert_ok(owner_client.get_stream_id("engineering"))["stream_id"]
    bulk = assert_ok(
        member_client.register(
            event_types=["delete_message"], client_capabilities={"bulk_message_deletion": True}
        )
    )
    legacy = assert_ok(member_client.register(event_types=["delete_message"]))

    def send(client: zulip.Client, topic: str, content: str) -> int:
        message = {"type": "stream", "to": "engineering", "topic": topic, "content": content}
        return int(assert_ok(client.send_message(message))["id"])

    mine = send(member_client, "builds", "oops")
    # Zulip 10 lets everyone delete their own messages by default; an organization that
    # leaves it to administrators refuses everyone else.
    groups = assert_ok(owner_client.register(event_types=["realm_user_groups"]))
    admins = next(
        g["id"] for g in groups["realm_user_groups"] if g["name"] == "role:administrators"
    )
    setting = {"can_delete_own_message_group": json.dumps({"new": admins})}
    assert_ok(owner_client.call_endpoint(url="realm", method="PATCH", request=setting))
    assert_error(
        member_client.delete_message(mine),
        "BAD_REQUEST",
        "You don't have permission to delete this message",
    )
    assert_ok(owner_client.delete_message(mine))
    assert_error(owner_client.get_raw_message(mine), "BAD_REQUEST", "Invalid message(s)")
    assert_error(owner_client.delete_message(mine), "BAD_REQUEST", "Invalid message(s)")

    doomed = [send(owner_client, "deploys", "one"), send(member_client, "Deploys", "two")]
    kept = send(owner_client, "builds", "green")
    request = {"topic_name": "DEPLOYS"}
    url = f"streams/{stream_id}/delete_topic"
    assert_error(
        member_client.call_endpoint(url=url, method="POST", request=request),
        "UNAUTHORIZED_PRINCIPAL",
        "Must be an organization administrator",
    )
    done = assert_ok(owner_client.call_endpoint(url=url, method="POST", request=request))
    assert done["complete"] is True
    page = assert_ok(
        member_client.get_messages(
            {
                "anchor": "newest",
                "num_before": 10,
                "num_after": 0,
                "narrow": [{"operator": "stream", "operand": "engineering"}],
            }
        )
    )
    assert [m["id"] for m in page["messages"]] == [kept]

    # Each queue got its own form: the bulk one per deletion and exact topic (hubbub keeps
    # topics that differ only in case apart), the legacy one per message.
    assert [(e["message_ids"], e["topic"]) for e in _events(member_client, bulk)] == [
        ([mine], "builds"),
        (doomed[:1], "deploys"),
        (doomed[1:], "Deploys"),
    ]
    assert [e["message_id"] for e in _events(member_client, legacy)] == [mine, *doomed]
