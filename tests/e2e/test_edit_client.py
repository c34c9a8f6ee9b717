"""Editing messages, moving them and reading their history through the official ``zulip``
client, against a real ``hubbub serve``."""

from __future__ import annotations

import zulip

from tests.e2e.client import assert_error, assert_ok


def test_edit_move_and_history(owner_client: zulip.Client, member_client: zulip.Client) -> None:
    assert_ok(
        owner_client.add_subscriptions(
            streams=[{"name": "engineering"}, {"name": "design"}],
            principals=["cordelia@example.com"],
        )
    )
    queue = assert_ok(member_client.register(event_types=["update_message"]))
    sent = assert_ok(
        owner_client.send_message(
            {"type": "stream", "to": "engineering", "topic": "builds", "content": "red"}
        )
    )
    mid = sent["id"]
    assert_ok(owner_client.update_message({"message_id": mid, "content": "**green**"}))
    later = assert_ok(
        owner_client.send_message(
            {"type": "stream", "to": "engineering", "topic": "builds", "content": "later"}
        )
    )
    # The client sends topic and propagate_mode as plain strings.
    assert_ok(
        member_client.update_message(
            {"message_id": mid, "topic": "deploys", "propagate_mode": "change_all"}
        )
    )
    streams = assert_ok(owner_client.get_streams())["streams"]
    design = next(s["stream_id"] for s in streams if s["name"] == "design")
    assert_ok(owner_client.update_message({"message_id": later["id"], "stream_id": design}))

    raw = assert_ok(member_client.get_raw_message(mid))
    assert raw["raw_content"] == "**green**"
    assert raw["message"]["subject"] == "deploys"
    assert raw["message"]["content"] == "<p><strong>green</strong></p>"
    moved = assert_ok(member_client.get_raw_message(later["id"]))["message"]
    assert (moved["display_recipient"], moved["subject"]) == ("design", "deploys")

    history = assert_ok(member_client.get_message_history(mid))["message_history"]
    assert [h["content"] for h in history] == ["red", "**green**", "**green**"]
    assert [h["topic"] for h in history] == ["builds", "builds", "deploys"]
    assert history[1]["prev_content"] == "red"
    assert 'class="highlight_text_inserted"' in history[1]["content_html_diff"]
    assert history[2]["prev_topic"] == "builds"

    events = assert_ok(
        member_client.get_events(queue_id=queue["queue_id"], last_event_id=-1, dont_block=True)
    )["events"]
    assert [e["type"] for e in events] == ["update_message"] * 3
    assert events[0]["content"] == "**green**" and events[0]["orig_content"] == "red"
    assert events[1]["message_ids"] == [mid, later["id"]]
    assert events[2]["new_stream_id"] == design

    # Errors come back as Zulip words them.
    assert_error(
        member_client.update_message({"message_id": mid, "content": "mine now"}),
        "BAD_REQUEST",
        "You don't have permission to edit this message",
    )
    assert_error(
        owner_client.update_message({"message_id": mid}), "BAD_REQUEST", "Nothing to change"
    )
