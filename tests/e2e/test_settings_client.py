"""Settings, realm defaults and drafts through the official ``zulip`` client, against a
real ``hubbub serve``."""

from __future__ import annotations

import zulip

from tests.e2e.client import assert_ok


def test_settings_defaults_and_drafts(owner_client: zulip.Client) -> None:
    client = owner_client
    queue = assert_ok(
        client.register(
            event_types=["user_settings", "realm_user_settings_defaults", "drafts"],
            client_capabilities={"user_settings_object": True},
        )
    )
    assert queue["user_settings"]["enter_sends"] is False
    assert queue["drafts"] == []

    # The client's own helper uses the legacy /settings/notifications path.
    body = assert_ok(client.update_notification_settings({"enable_sounds": False, "x": 1}))
    assert body["ignored_parameters_unsupported"] == ["x"]
    assert_ok(
        client.call_endpoint(
            url="settings", method="PATCH", request={"enter_sends": True, "emojiset": "text"}
        )
    )
    assert_ok(
        client.call_endpoint(
            url="realm/user_settings_defaults", method="PATCH", request={"color_scheme": 2}
        )
    )
    ids = assert_ok(
        client.call_endpoint(
            url="drafts",
            method="POST",
            request={
                "drafts": [{"type": "", "to": [], "topic": "", "content": "Remember the milk"}]
            },
        )
    )["ids"]
    drafts = assert_ok(client.call_endpoint(url="drafts", method="GET"))["drafts"]
    assert [d["content"] for d in drafts] == ["Remember the milk"]
    assert_ok(client.call_endpoint(url=f"drafts/{ids[0]}", method="DELETE"))

    events = assert_ok(
        client.get_events(queue_id=queue["queue_id"], last_event_id=-1, dont_block=True)
    )["events"]
    summary = [(e["type"], e.get("property") or e.get("op")) for e in events]
    assert summary == [
        ("user_settings", "enable_sounds"),
        # One request's settings are applied in the catalogue's order.
        ("user_settings", "emojiset"),
        ("user_settings", "enter_sends"),
        ("realm_user_settings_defaults", "color_scheme"),
        ("drafts", "add"),
        ("drafts", "remove"),
    ]
    fresh = assert_ok(client.register(event_types=["user_settings"]))
    assert fresh["user_settings"]["enable_sounds"] is False
    assert fresh["user_settings"]["emojiset"] == "text"
