"""``realm`` update events for organization settings."""

from __future__ import annotations

from typing import Any

import pytest

from hubbub.actions.realm_settings import do_set_realm_property
from tests.events.verify import verify_action
from tests.helpers import TestEnv


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("name", "Renamed Org"),
        ("enable_spectator_access", True),
        ("message_retention_days", 30),
        ("allow_message_editing", False),
        ("create_public_stream_policy", 2),
        ("create_web_public_stream_policy", 6),
        ("jitsi_server_url", "https://jitsi.example.com"),
        ("message_content_edit_limit_seconds", None),
    ],
)
async def test_realm_property_update(env: TestEnv, name: str, value: Any) -> None:
    async def action() -> None:
        async with env.services.write() as tx:
            env.realm = await do_set_realm_property(tx, env.realm, name, value)

    events = await verify_action(env, env.users["hamlet"], action, num_events=1)
    assert events[0] == {
        "type": "realm",
        "op": "update",
        "property": name,
        "value": value,
        "id": events[0]["id"],
    }


async def test_setting_back_to_default_is_stored_as_default(env: TestEnv) -> None:
    async with env.services.write() as tx:
        realm = await do_set_realm_property(tx, env.realm, "mandatory_topics", True)
    assert realm.settings == {"mandatory_topics": True}
    async with env.services.write() as tx:
        realm = await do_set_realm_property(tx, realm, "mandatory_topics", False)
    assert realm.settings == {}
    assert realm.setting("mandatory_topics") is False
