"""Retention settings through the official ``zulip`` client, against a real
``hubbub serve`` (SQLite, and PostgreSQL with HUBBUB_TEST_DATABASE_URL): a stream's period
set with ``update_stream``, the realm's with ``call_endpoint``, both read back."""

from __future__ import annotations

import zulip

from tests.e2e.client import assert_error, assert_ok


def _stream_days(client: zulip.Client, stream_id: int) -> object:
    streams = assert_ok(client.get_streams())["streams"]
    [days] = [s["message_retention_days"] for s in streams if s["stream_id"] == stream_id]
    return days


def test_stream_retention(owner_client: zulip.Client, member_client: zulip.Client) -> None:
    assert_ok(owner_client.add_subscriptions(streams=[{"name": "ephemeral"}]))
    stream_id = assert_ok(owner_client.get_stream_id("ephemeral"))["stream_id"]
    assert _stream_days(member_client, stream_id) is None

    # The client sends an int as JSON and a str raw; both spellings are understood.
    assert_ok(owner_client.update_stream({"stream_id": stream_id, "message_retention_days": 30}))
    assert _stream_days(member_client, stream_id) == 30
    assert_ok(
        owner_client.update_stream({"stream_id": stream_id, "message_retention_days": "unlimited"})
    )
    assert _stream_days(member_client, stream_id) == -1
    subs = assert_ok(owner_client.get_subscriptions())["subscriptions"]
    assert [s["message_retention_days"] for s in subs if s["stream_id"] == stream_id] == [-1]
    assert_ok(
        owner_client.update_stream(
            {"stream_id": stream_id, "message_retention_days": "realm_default"}
        )
    )
    assert _stream_days(member_client, stream_id) is None

    assert_error(
        owner_client.update_stream({"stream_id": stream_id, "message_retention_days": 0}),
        "BAD_REQUEST",
        "Bad value for 'message_retention_days': 0",
    )
    assert_error(
        member_client.update_stream({"stream_id": stream_id, "message_retention_days": 7}),
        "BAD_REQUEST",
        "You do not have permission to administer this channel.",
    )
    assert _stream_days(member_client, stream_id) is None


def test_realm_retention(owner_client: zulip.Client, member_client: zulip.Client) -> None:
    state = assert_ok(member_client.register(event_types=["realm"]))
    assert state["realm_message_retention_days"] == -1

    result = assert_ok(
        owner_client.call_endpoint(
            url="realm", method="PATCH", request={"message_retention_days": 90}
        )
    )
    assert result["message_retention_days"] == 90
    fresh = assert_ok(member_client.register(fetch_event_types=["realm"]))
    assert fresh["realm_message_retention_days"] == 90
    events = assert_ok(
        member_client.get_events(queue_id=state["queue_id"], last_event_id=state["last_event_id"])
    )["events"]
    assert [(e["type"], e["property"], e["value"]) for e in events] == [
        ("realm", "message_retention_days", 90)
    ]

    assert_ok(
        owner_client.call_endpoint(
            url="realm", method="PATCH", request={"message_retention_days": "unlimited"}
        )
    )
    assert_error(
        member_client.call_endpoint(
            url="realm", method="PATCH", request={"message_retention_days": 5}
        ),
        "UNAUTHORIZED_PRINCIPAL",
        "Must be an organization administrator",
    )
    fresh = assert_ok(member_client.register(fetch_event_types=["realm"]))
    assert fresh["realm_message_retention_days"] == -1
