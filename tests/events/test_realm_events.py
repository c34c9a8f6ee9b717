"""``realm`` update events for organization settings."""

from __future__ import annotations

from typing import Any

import pytest

from hubbub.actions.realm_settings import do_set_realm_property, realm_property_event
from tests.events.verify import verify_action
from tests.helpers import TestEnv, assert_success, without_id


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("name", "Renamed Org"),
        ("enable_spectator_access", True),
        ("message_retention_days", 30),
        ("allow_message_editing", False),
        ("waiting_period_threshold", 3),
        ("jitsi_server_url", "https://jitsi.example.com"),
        ("message_content_edit_limit_seconds", None),
        ("require_unique_names", True),
        ("enable_guest_user_dm_warning", False),
        ("message_edit_history_visibility_policy", "none"),
    ],
)
async def test_realm_property_update(env: TestEnv, name: str, value: Any) -> None:
    async def action() -> None:
        async with env.services.write() as tx:
            env.realm = await do_set_realm_property(tx, env.realm, name, value)

    events = await verify_action(env, env.users["hamlet"], action, num_events=1)
    # ``update``, or ``update_dict`` for the message-editing settings.
    assert events[0] == {**realm_property_event(name, value), "id": events[0]["id"]}


async def test_setting_back_to_default_is_stored_as_default(env: TestEnv) -> None:
    async with env.services.write() as tx:
        realm = await do_set_realm_property(tx, env.realm, "mandatory_topics", True)
    assert realm.settings == {"mandatory_topics": True}
    async with env.services.write() as tx:
        realm = await do_set_realm_property(tx, realm, "mandatory_topics", False)
    assert realm.settings == {}
    assert realm.setting("mandatory_topics") is False


def _patch(env: TestEnv, params: dict[str, Any], user: str = "desdemona") -> Any:
    async def action() -> None:
        assert_success(await env.client(user).patch("/realm", params))

    return action


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"name": "Elsinore"}, [("update", "name", "Elsinore")]),
        ({"description": "A **castle**"}, [("update", "description", "A **castle**")]),
        ({"default_language": "fr"}, [("update", "default_language", "fr")]),
        ({"waiting_period_threshold": 10}, [("update", "waiting_period_threshold", 10)]),
        ({"message_retention_days": 5}, [("update", "message_retention_days", 5)]),
        (
            {"jitsi_server_url": '"https://j.example.com"'},
            [("update", "jitsi_server_url", "https://j.example.com")],
        ),
        # The message-editing settings keep their historical update_dict format.
        ({"allow_message_editing": False}, [("update_dict", "allow_message_editing", False)]),
        (
            {"message_content_edit_limit_seconds": '"unlimited"'},
            [("update_dict", "message_content_edit_limit_seconds", None)],
        ),
        # One event per changed setting, in the order sent.
        (
            {"mandatory_topics": True, "require_unique_names": True, "name": "Hubbub"},
            [("update", "mandatory_topics", True), ("update", "require_unique_names", True)],
        ),
        # Feature levels 348 and 358.
        (
            {"enable_guest_user_dm_warning": False},
            [("update", "enable_guest_user_dm_warning", False)],
        ),
        (
            {"message_edit_history_visibility_policy": "moves"},
            [("update", "message_edit_history_visibility_policy", "moves")],
        ),
    ],
)
async def test_patch_realm_events(
    env: TestEnv, params: dict[str, Any], expected: list[tuple[str, str, Any]]
) -> None:
    events = await verify_action(
        env, env.users["hamlet"], _patch(env, params), num_events=len(expected)
    )
    for event, (op, name, value) in zip(events, expected, strict=True):
        if op == "update":
            assert without_id(event) == {
                "type": "realm",
                "op": "update",
                "property": name,
                "value": value,
            }
        else:
            assert without_id(event) == {
                "type": "realm",
                "op": "update_dict",
                "property": "default",
                "data": {name: value},
            }


async def test_patch_realm_events_reach_everyone(env: TestEnv) -> None:
    for user in ("polonius", "desdemona", "shiva"):
        await verify_action(env, env.users[user], _patch(env, {"giphy_rating": 3 + len(user) % 2}))
    # A failed or no-op request sends nothing.
    await verify_action(env, env.users["hamlet"], _patch(env, {"name": "Hubbub"}), num_events=0)


async def test_edit_history_policy_event_updates_legacy_key(env: TestEnv) -> None:
    """One ``update`` event keeps both the policy and the deprecated
    ``realm_allow_edit_history`` (feature level 358) current."""
    hamlet = env.users["hamlet"]
    for policy, allowed in [("none", False), ("moves", True), ("all", True)]:
        before = assert_success(
            await env.client(hamlet).post("/register", {"fetch_event_types": ["realm"]})
        )
        events = await verify_action(
            env,
            hamlet,
            _patch(env, {"message_edit_history_visibility_policy": policy}),
            num_events=1,
        )
        assert events[0]["value"] == policy
        after = assert_success(
            await env.client(hamlet).post("/register", {"fetch_event_types": ["realm"]})
        )
        assert after["realm_allow_edit_history"] is allowed
        assert before["realm_allow_edit_history"] is not allowed or policy == "all"
