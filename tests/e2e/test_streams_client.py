"""Streams, subscriptions and topic preferences through the official ``zulip`` client,
against a real ``hubbub serve`` (SQLite, and PostgreSQL with HUBBUB_TEST_DATABASE_URL)."""

from __future__ import annotations

import zulip

from tests.e2e.client import assert_ok


def test_streams_and_subscriptions(owner_client: zulip.Client, member_client: zulip.Client) -> None:
    result = assert_ok(
        owner_client.add_subscriptions(
            streams=[{"name": "engineering", "description": "Build things"}],
            principals=["cordelia@example.com"],
        )
    )
    assert result["subscribed"] == {"cordelia@example.com": ["engineering"]}
    assert_ok(owner_client.add_subscriptions(streams=[{"name": "engineering"}]))

    stream_id = assert_ok(owner_client.get_stream_id("engineering"))["stream_id"]
    names = [s["name"] for s in assert_ok(member_client.get_streams())["streams"]]
    assert "engineering" in names
    subscribers = assert_ok(member_client.get_subscribers(stream="engineering"))["subscribers"]
    assert len(subscribers) == 2

    assert_ok(
        owner_client.update_stream(
            {"stream_id": stream_id, "description": "Build **more**", "stream_post_policy": 2}
        )
    )
    stream = assert_ok(owner_client.call_endpoint(url=f"streams/{stream_id}", method="GET"))
    assert stream["stream"]["description"] == "Build **more**"
    assert stream["stream"]["stream_post_policy"] == 2

    assert_ok(
        member_client.update_subscription_settings(
            [
                {"stream_id": stream_id, "property": "pin_to_top", "value": True},
                {"stream_id": stream_id, "property": "color", "value": "#aabbcc"},
            ]
        )
    )
    [sub] = assert_ok(member_client.get_subscriptions())["subscriptions"]
    assert (sub["pin_to_top"], sub["color"]) == (True, "#aabbcc")

    member_state = assert_ok(member_client.register(event_types=["subscription", "user_topic"]))
    assert [s["name"] for s in member_state["subscriptions"]] == ["engineering"]

    result = assert_ok(
        owner_client.remove_subscriptions(["engineering"], principals=["cordelia@example.com"])
    )
    assert result["removed"] == ["engineering"]
    events = assert_ok(
        member_client.get_events(
            queue_id=member_state["queue_id"], last_event_id=member_state["last_event_id"]
        )
    )["events"]
    assert [(e["type"], e["op"]) for e in events] == [("subscription", "remove")]

    assert_ok(owner_client.delete_stream(stream_id))
    assert "engineering" not in [
        s["name"] for s in assert_ok(owner_client.get_streams())["streams"]
    ]


def test_topic_preferences(owner_client: zulip.Client, member_client: zulip.Client) -> None:
    assert_ok(member_client.add_subscriptions(streams=[{"name": "social"}]))
    stream_id = assert_ok(member_client.get_stream_id("social"))["stream_id"]
    assert_ok(member_client.mute_topic({"op": "add", "stream": "social", "topic": "lunch"}))
    assert_ok(
        member_client.call_endpoint(
            url="user_topics",
            method="POST",
            request={"stream_id": stream_id, "topic": "releases", "visibility_policy": 3},
        )
    )
    state = assert_ok(member_client.register(event_types=["user_topic", "muted_topics"]))
    policies = {t["topic_name"]: t["visibility_policy"] for t in state["user_topics"]}
    assert policies == {"lunch": 1, "releases": 3}
    # A client that names user_topic gets no legacy muted_topics (as Zulip); one that does
    # not still gets it.
    assert "muted_topics" not in state
    legacy = assert_ok(member_client.register(event_types=["muted_topics"]))
    assert [m[:2] for m in legacy["muted_topics"]] == [["social", "lunch"]]
    assert_ok(member_client.mute_topic({"op": "remove", "stream_id": stream_id, "topic": "lunch"}))
    events = assert_ok(
        member_client.get_events(queue_id=state["queue_id"], last_event_id=state["last_event_id"])
    )["events"]
    assert {e["type"] for e in events} == {"user_topic", "muted_topics"}
    user_topic = next(e for e in events if e["type"] == "user_topic")
    assert (user_topic["topic_name"], user_topic["visibility_policy"]) == ("lunch", 0)


def test_update_subscriptions_in_one_call(member_client: zulip.Client) -> None:
    assert_ok(member_client.add_subscriptions(streams=[{"name": "old-team"}]))
    result = assert_ok(
        member_client.call_endpoint(
            url="users/me/subscriptions",
            method="PATCH",
            request={"add": [{"name": "new-team"}], "delete": ["old-team"]},
        )
    )
    assert list(result["subscribed"].values()) == [["new-team"]]
    assert result["removed"] == ["old-team"]
    names = {s["name"] for s in assert_ok(member_client.get_subscriptions())["subscriptions"]}
    assert "new-team" in names and "old-team" not in names
