"""Organization settings and user groups through the official ``zulip`` client, against a
real ``hubbub serve``."""

from __future__ import annotations

import zulip

from tests.e2e.client import assert_ok


def test_realm_settings_and_user_groups(owner_client: zulip.Client) -> None:
    client = owner_client
    queue = assert_ok(client.register(event_types=["realm", "user_group"]))
    # The client sends strings raw: "unlimited" works unencoded, as users will write it.
    result = assert_ok(
        client.call_endpoint(
            url="realm",
            method="PATCH",
            request={
                "name": "Elsinore",
                "mandatory_topics": True,
                "message_content_edit_limit_seconds": "unlimited",
            },
        )
    )
    assert result["name"] == "updated" and result["mandatory_topics"] is True
    assert result["message_content_edit_limit_seconds"] is None

    me = assert_ok(client.get_profile())["user_id"]
    assert_ok(
        client.create_user_group({"name": "crew", "description": "The crew", "members": [me]})
    )
    groups = {g["name"]: g for g in assert_ok(client.get_user_groups())["user_groups"]}
    crew = groups["crew"]
    assert crew["members"] == [me] and crew["is_system_group"] is False
    assert_ok(client.update_user_group({"group_id": crew["id"], "description": "Sailors"}))
    assert_ok(client.update_user_group_members(crew["id"], {"delete": [me]}))
    members = assert_ok(client.call_endpoint(url=f"user_groups/{crew['id']}/members", method="GET"))
    assert members["members"] == []
    # Groups are deactivated since feature level 290 (DELETE went at 294); a queue
    # without include_deactivated_groups sees the group removed.
    assert_ok(client.call_endpoint(url=f"user_groups/{crew['id']}/deactivate", method="POST"))

    events = assert_ok(
        client.get_events(queue_id=queue["queue_id"], last_event_id=-1, dont_block=True)
    )["events"]
    kinds = [(e["type"], e["op"]) for e in events]
    assert kinds == [
        ("realm", "update"),
        ("realm", "update"),
        ("realm", "update_dict"),
        ("user_group", "add"),
        ("user_group", "update"),
        ("user_group", "remove_members"),
        ("user_group", "remove"),
    ]
