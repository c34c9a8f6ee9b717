"""Presence and user status through the official ``zulip`` client, against a real
``hubbub serve``."""

from __future__ import annotations

import zulip

from tests.e2e.client import assert_ok


def test_presence_and_status(owner_client: zulip.Client) -> None:
    me = assert_ok(owner_client.get_profile())
    body = assert_ok(owner_client.update_presence({"status": "active", "slim_presence": True}))
    entry = body["presences"][str(me["user_id"])]
    assert entry["active_timestamp"] == entry["idle_timestamp"] > 0
    presence = assert_ok(owner_client.get_user_presence(me["email"]))["presence"]
    assert presence["aggregated"]["status"] == "active"
    assert set(presence) == {"website", "aggregated"}
    realm = assert_ok(owner_client.get_realm_presence())
    assert me["email"] in realm["presences"] and realm["server_timestamp"] > 0

    # This client version has no update_user_status method.
    assert_ok(
        owner_client.call_endpoint(
            url="users/me/status",
            method="POST",
            request={"status_text": "on vacation", "emoji_name": "car"},
        )
    )
    state = assert_ok(owner_client.register(event_types=["user_status"]))
    assert state["user_status"] == {
        str(me["user_id"]): {
            "status_text": "on vacation",
            "emoji_name": "car",
            "emoji_code": "1f697",
            "reaction_type": "unicode_emoji",
        }
    }
    error = owner_client.call_endpoint(url="users/me/status", method="POST", request={})
    assert error["result"] == "error" and error["msg"] == "Client did not pass any new values."
