"""Linkifiers, muted users and alert words through the official ``zulip`` client, against a
real ``hubbub serve`` (SQLite, and PostgreSQL with HUBBUB_TEST_DATABASE_URL)."""

from __future__ import annotations

import zulip

from tests.e2e.client import assert_error, assert_ok


def test_linkifiers_muting_and_alert_words(owner_client: zulip.Client) -> None:
    # The client sends url_template (not url_format_string) from feature level 176 on.
    first = assert_ok(
        owner_client.add_realm_filter(
            "#(?P<id>[0-9]+)", "https://github.com/zulip/zulip/issues/{id}"
        )
    )["id"]
    second = assert_ok(
        owner_client.add_realm_filter("PR (?P<id>[0-9]+)", "https://pr.example/{id}")
    )["id"]
    state = assert_ok(
        owner_client.register(
            event_types=["realm_linkifiers"], client_capabilities={"linkifier_url_template": True}
        )
    )
    assert [item["id"] for item in state["realm_linkifiers"]] == [first, second]

    assert_ok(
        owner_client.call_endpoint(
            url=f"realm/filters/{first}",
            method="PATCH",
            request={"pattern": "#(?P<id>[0-9a-f]+)", "url_template": "https://e.com/{id}"},
        )
    )
    assert_ok(
        owner_client.call_endpoint(
            url="realm/linkifiers",
            method="PATCH",
            request={"ordered_linkifier_ids": [second, first]},
        )
    )
    linkifiers = assert_ok(owner_client.get_realm_linkifiers())["linkifiers"]
    assert linkifiers == [
        {"pattern": "PR (?P<id>[0-9]+)", "url_template": "https://pr.example/{id}", "id": second},
        {"pattern": "#(?P<id>[0-9a-f]+)", "url_template": "https://e.com/{id}", "id": first},
    ]
    assert_error(
        owner_client.add_realm_filter("(foo", "https://e.com"),
        "BAD_REQUEST",
        "Bad regular expression: missing ): (foo",
    )
    assert_ok(owner_client.remove_realm_filter(second))
    assert_error(owner_client.remove_realm_filter(second), "BAD_REQUEST", "Linkifier not found.")
    events = assert_ok(
        owner_client.get_events(queue_id=state["queue_id"], last_event_id=state["last_event_id"])
    )["events"]
    assert [e["type"] for e in events] == ["realm_linkifiers"] * 3
    assert events[-1]["realm_linkifiers"] == [linkifiers[1]]

    # Muting a user.
    user_id = assert_ok(
        owner_client.create_user(
            {
                "email": "cordelia@example.com",
                "password": "a long password",
                "full_name": "Cordelia",
            }
        )
    )["user_id"]
    assert_ok(owner_client.call_endpoint(url=f"users/me/muted_users/{user_id}", method="POST"))
    assert_error(
        owner_client.call_endpoint(url=f"users/me/muted_users/{user_id}", method="POST"),
        "BAD_REQUEST",
        "User already muted",
    )
    state = assert_ok(owner_client.register(event_types=["muted_users", "alert_words"]))
    assert [m["id"] for m in state["muted_users"]] == [user_id]
    assert_ok(owner_client.call_endpoint(url=f"users/me/muted_users/{user_id}", method="DELETE"))

    # Alert words.
    assert assert_ok(owner_client.add_alert_words(["lunch", " Tea ", "LUNCH"]))["alert_words"] == [
        "LUNCH",
        "Tea",
    ]
    assert assert_ok(owner_client.remove_alert_words(["tea"]))["alert_words"] == ["LUNCH"]
    assert assert_ok(owner_client.get_alert_words())["alert_words"] == ["LUNCH"]
    events = assert_ok(
        owner_client.get_events(queue_id=state["queue_id"], last_event_id=state["last_event_id"])
    )["events"]
    assert [(e["type"], len(e[e["type"]])) for e in events] == [
        ("muted_users", 0),
        ("alert_words", 2),
        ("alert_words", 1),
    ]
