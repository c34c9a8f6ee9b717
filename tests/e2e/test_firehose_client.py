"""A realm-wide mirror bot's queue (``all_public_streams``) through the official client."""

from __future__ import annotations

import zulip

from tests.e2e.client import assert_ok


def test_all_public_streams_queue(owner_client: zulip.Client, member_client: zulip.Client) -> None:
    # The owner creates a stream the member is not subscribed to.
    assert_ok(owner_client.add_subscriptions(streams=[{"name": "ops"}]))
    queue = assert_ok(member_client.register(event_types=["message"], all_public_streams=True))
    sent = assert_ok(
        owner_client.send_message(
            {"type": "stream", "to": "ops", "topic": "pager", "content": "disk full"}
        )
    )
    events = assert_ok(
        member_client.get_events(queue_id=queue["queue_id"], last_event_id=-1, dont_block=True)
    )["events"]
    assert [(e["message"]["id"], e["flags"]) for e in events] == [(sent["id"], [])]
