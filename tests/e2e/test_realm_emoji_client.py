"""Custom emoji through the official ``zulip`` client, against a real ``hubbub serve``:
upload, list, use in a message and a reaction, fetch the image and the emoji data file
without credentials, deactivate."""

from __future__ import annotations

from pathlib import Path

import requests
import zulip

from tests.e2e.client import assert_error, assert_ok
from tests.emoji_helpers import png_bytes


def test_custom_emoji(
    owner_client: zulip.Client, member_client: zulip.Client, tmp_path: Path
) -> None:
    image = tmp_path / "green tick.png"
    image.write_bytes(png_bytes(128, 128, (0, 160, 0, 255)))
    with image.open("rb") as handle:
        assert_ok(member_client.upload_custom_emoji("green_tick", handle))
    with image.open("rb") as handle:
        assert_error(
            member_client.upload_custom_emoji("green_tick", handle),
            "BAD_REQUEST",
            "A custom emoji with this name already exists.",
        )
    [(key, emoji)] = assert_ok(owner_client.get_realm_emoji())["emoji"].items()
    assert emoji["name"] == "green_tick" and emoji["id"] == key

    site = owner_client.base_url.removesuffix("/api/").removesuffix("/api")
    served = requests.get(site + emoji["source_url"], timeout=10)
    assert served.status_code == 200 and served.headers["content-type"] == "image/png"

    state = assert_ok(owner_client.register(event_types=["realm", "realm_emoji"]))
    assert state["realm_emoji"] == {key: emoji}
    data = requests.get(state["server_emoji_data_url"], timeout=10)
    assert data.status_code == 200 and "smile" in data.json()["code_to_names"]["1f642"]

    assert_ok(owner_client.add_subscriptions(streams=[{"name": "emoji"}]))
    sent = assert_ok(
        owner_client.send_message(
            {"type": "stream", "to": "emoji", "topic": "t", "content": "done :green_tick:"}
        )
    )
    message = assert_ok(owner_client.get_raw_message(sent["id"]))["message"]
    assert f'src="{emoji["source_url"]}"' in message["content"]
    assert_ok(owner_client.add_reaction({"message_id": sent["id"], "emoji_name": "green_tick"}))
    message = assert_ok(owner_client.get_raw_message(sent["id"]))["message"]
    assert [(r["emoji_code"], r["reaction_type"]) for r in message["reactions"]] == [
        (key, "realm_emoji")
    ]

    assert_ok(member_client.delete_custom_emoji("green_tick"))
    assert_error(
        member_client.delete_custom_emoji("green_tick"),
        "BAD_REQUEST",
        "Emoji 'green_tick' does not exist",
    )
    events = assert_ok(
        owner_client.get_events(queue_id=state["queue_id"], last_event_id=state["last_event_id"])
    )["events"]
    emoji_events = [e for e in events if e["type"] == "realm_emoji"]
    assert emoji_events[-1]["realm_emoji"][key]["deactivated"] is True
