"""``PATCH /realm``: organization settings, their validation and permissions."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.db.tables import realm as realm_table
from hubbub.models import Realm
from hubbub.queries.realms import get_realm_by_id
from hubbub.realm_settings import REALM_SETTING_DEFAULTS
from tests.group_settings_helpers import system_group_id
from tests.helpers import TestEnv, assert_error, assert_success


async def _realm(env: TestEnv) -> Realm:
    async with env.services.db.read() as conn:
        realm = await get_realm_by_id(conn, env.realm.id)
    assert realm is not None
    return realm


async def _patch(env: TestEnv, params: dict[str, Any], user: str = "iago") -> Any:
    return await env.client(user).patch("/realm", params)


async def _state(env: TestEnv, user: str = "hamlet") -> dict[str, Any]:
    return assert_success(
        await env.client(user).post("/register", {"fetch_event_types": ["realm"]})
    )


async def test_name_and_description(env: TestEnv) -> None:
    body = assert_success(await _patch(env, {"name": "Elsinore", "description": "The **castle**"}))
    assert body["name"] == "updated" and body["description"] == "updated"
    realm = await _realm(env)
    assert (realm.name, realm.description) == ("Elsinore", "The **castle**")
    state = await _state(env)
    assert state["realm_name"] == "Elsinore"
    # /register has the Markdown source; /server_settings renders it.
    assert state["realm_description"] == "The **castle**"
    server = assert_success(await env.client().get("/server_settings"))
    assert server["realm_description"].startswith("<p>The ")


async def test_unchanged_values_are_not_reported(env: TestEnv) -> None:
    body = assert_success(await _patch(env, {"name": "Hubbub", "mandatory_topics": True}))
    assert "name" not in body and body["mandatory_topics"] is True
    body = assert_success(await _patch(env, {"mandatory_topics": True}))
    assert "mandatory_topics" not in body


SETTINGS: list[tuple[str, Any, Any]] = [
    # (name, value sent, value stored/reported)
    ("enable_spectator_access", True, True),
    ("allow_message_editing", False, False),
    ("message_edit_history_visibility_policy", "moves", "moves"),
    ("message_edit_history_visibility_policy", "none", "none"),
    ("require_unique_names", True, True),
    ("enable_guest_user_dm_warning", False, False),
    ("mandatory_topics", True, True),
    ("default_language", "de", "de"),
    ("default_code_block_language", "python", "python"),
    ("digest_weekday", 0, 0),
    ("org_type", 35, 35),
    ("video_chat_provider", 0, 0),
    ("giphy_rating", 5, 5),
    ("message_content_edit_limit_seconds", 3600, 3600),
    ("message_content_edit_limit_seconds", "unlimited", None),
    ("message_content_delete_limit_seconds", '"unlimited"', None),
    ("move_messages_within_stream_limit_seconds", 60, 60),
    ("move_messages_between_streams_limit_seconds", "unlimited", None),
    ("jitsi_server_url", '"https://jitsi.example.com"', "https://jitsi.example.com"),
    ("enable_read_receipts", False, False),
    ("inline_image_preview", False, False),
    ("inline_url_embed_preview", True, True),
    ("send_welcome_emails", False, False),
    ("digest_emails_enabled", True, True),
    ("message_content_allowed_in_email_notifications", False, False),
    ("name_changes_disabled", True, True),
    ("email_changes_disabled", True, True),
    ("avatar_changes_disabled", True, True),
    ("want_advertise_in_communities_directory", True, True),
    ("enable_guest_user_indicator", False, False),
    ("presence_disabled", True, True),
]


@pytest.mark.parametrize(("name", "sent", "stored"), SETTINGS)
async def test_each_setting(env: TestEnv, name: str, sent: Any, stored: Any) -> None:
    body = assert_success(await _patch(env, {name: sent}))
    reported = "updated" if isinstance(stored, str) else stored
    assert body[name] == reported
    realm = await _realm(env)
    value = realm.enable_spectator_access if name == "enable_spectator_access" else None
    if name != "enable_spectator_access":
        value = realm.setting(name)
    assert value == stored
    assert (await _state(env))[f"realm_{name}"] == stored


async def test_owner_only_settings(env: TestEnv) -> None:
    owner_only = {
        "invite_required": False,
        "emails_restricted_to_domains": True,
        "disallow_disposable_email_addresses": False,
        "waiting_period_threshold": 3,
        "message_retention_days": 30,
    }
    for name, value in owner_only.items():
        assert_error(
            await _patch(env, {name: value}),
            "Must be an organization owner",
            code="UNAUTHORIZED_PRINCIPAL",
        )
    assert (await _realm(env)).settings == {}
    body = assert_success(await _patch(env, owner_only, user="desdemona"))
    assert body == {"result": "success", "msg": "", **owner_only}
    assert (await _realm(env)).settings == owner_only


async def test_message_retention_days(env: TestEnv) -> None:
    owner = "desdemona"
    assert_success(await _patch(env, {"message_retention_days": 10}, user=owner))
    assert (await _realm(env)).setting("message_retention_days") == 10
    body = assert_success(await _patch(env, {"message_retention_days": '"unlimited"'}, owner))
    assert body["message_retention_days"] == -1
    assert (await _state(env))["realm_message_retention_days"] == -1
    for bad, shown in [("0", "0"), ("-5", "-5"), ('"realm_default"', "realm_default")]:
        assert_error(
            await _patch(env, {"message_retention_days": bad}, owner),
            f"Bad value for 'message_retention_days': {shown}",
        )
    assert (await _realm(env)).setting("message_retention_days") == -1


async def test_admins_only(env: TestEnv) -> None:
    for user in ("shiva", "hamlet", "polonius"):
        assert_error(
            await _patch(env, {"name": "Mine"}, user=user),
            "Must be an organization administrator",
            code="UNAUTHORIZED_PRINCIPAL",
        )
    assert (await _realm(env)).name == "Hubbub"


async def test_validation_errors_change_nothing(env: TestEnv) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"name": "x" * 41}, "name is too long (limit: 40 characters)"),
        ({"description": "x" * 1001}, "description is too long (limit: 1000 characters)"),
        ({"digest_weekday": 7}, "Invalid digest_weekday"),
        ({"org_type": 11}, "Invalid org_type"),
        ({"allow_message_editing": "yes"}, "allow_message_editing is not valid JSON"),
        ({"mandatory_topics": 1}, "mandatory_topics is not a boolean"),
        ({"default_language": "xx"}, "Invalid language 'xx'"),
        ({"video_chat_provider": 9}, "Invalid video_chat_provider 9"),
        ({"giphy_rating": 9}, "Invalid giphy_rating 9"),
        (
            {"message_content_edit_limit_seconds": 0},
            "Bad value for 'message_content_edit_limit_seconds': 0",
        ),
        (
            {"message_content_delete_limit_seconds": '"forever"'},
            "Bad value for 'message_content_delete_limit_seconds': forever",
        ),
        ({"jitsi_server_url": '"not a url"'}, "jitsi_server_url is not an allowed_type"),
        (
            {"message_edit_history_visibility_policy": "always"},
            "Invalid message_edit_history_visibility_policy",
        ),
        ({"require_unique_names": "yes"}, "require_unique_names is not valid JSON"),
        ({"enable_guest_user_dm_warning": 1}, "enable_guest_user_dm_warning is not a boolean"),
        # A valid setting next to an invalid one is not stored either.
        ({"name": "Elsinore", "digest_weekday": -1}, "Invalid digest_weekday"),
    ]
    for params, msg in cases:
        assert_error(await _patch(env, params), msg)
    realm = await _realm(env)
    assert realm.settings == {} and realm.name == "Hubbub"
    assert_error(
        await _patch(env, {"waiting_period_threshold": -1}, user="desdemona"),
        "Invalid waiting_period_threshold",
    )


async def test_jitsi_default_and_legacy_names(env: TestEnv) -> None:
    assert_success(await _patch(env, {"jitsi_server_url": '"https://meet.example.org"'}))
    state = await _state(env)
    assert state["realm_jitsi_server_url"] == "https://meet.example.org"
    assert state["jitsi_server_url"] == "https://meet.example.org"
    body = assert_success(await _patch(env, {"jitsi_server_url": '"default"'}))
    assert body["jitsi_server_url"] is None
    state = await _state(env)
    assert state["realm_jitsi_server_url"] is None
    assert state["jitsi_server_url"] == "https://meet.jit.si"


async def test_unknown_and_moved_parameters_are_ignored(env: TestEnv) -> None:
    body = assert_success(
        await _patch(env, {"email_address_visibility": 3, "bogus": 1, "mandatory_topics": True})
    )
    assert body["ignored_parameters_unsupported"] == ["bogus", "email_address_visibility"]
    assert body["mandatory_topics"] is True


async def test_defaults_round_trip(env: TestEnv) -> None:
    """Setting a value back to its default leaves nothing stored."""
    assert_success(await _patch(env, {"giphy_rating": 3}))
    assert_success(await _patch(env, {"giphy_rating": REALM_SETTING_DEFAULTS["giphy_rating"]}))
    assert (await _realm(env)).settings == {}


async def test_group_setting_changes_permission_flags(env: TestEnv) -> None:
    state = assert_success(
        await env.client("hamlet").post("/register", {"fetch_event_types": ["realm_user"]})
    )
    assert state["can_create_public_streams"] is True
    admins = await system_group_id(env, "role:administrators")
    assert_success(await _patch(env, {"can_create_public_channel_group": {"new": admins}}))
    state = assert_success(
        await env.client("hamlet").post("/register", {"fetch_event_types": ["realm_user"]})
    )
    assert state["can_create_public_streams"] is False


async def test_new_settings_defaults_in_register(env: TestEnv) -> None:
    state = await _state(env)
    assert state["realm_require_unique_names"] is False
    assert state["realm_enable_guest_user_dm_warning"] is True
    assert state["realm_message_edit_history_visibility_policy"] == "all"
    assert state["realm_allow_edit_history"] is True


async def test_allow_edit_history_follows_the_policy(env: TestEnv) -> None:
    """``realm_allow_edit_history`` (deprecated at feature level 358) is still sent."""
    for policy, allowed in [("moves", True), ("none", False), ("all", True)]:
        assert_success(await _patch(env, {"message_edit_history_visibility_policy": policy}))
        state = await _state(env)
        assert state["realm_message_edit_history_visibility_policy"] == policy
        assert state["realm_allow_edit_history"] is allowed
    # Back at the default, nothing is stored.
    assert (await _realm(env)).settings == {}


async def test_allow_edit_history_parameter_is_ignored(env: TestEnv) -> None:
    """Zulip 10.2's update_realm no longer takes the boolean (feature level 358)."""
    body = assert_success(await _patch(env, {"allow_edit_history": False}))
    assert body["ignored_parameters_unsupported"] == ["allow_edit_history"]
    assert (await _realm(env)).settings == {}
    assert (await _state(env))["realm_message_edit_history_visibility_policy"] == "all"


async def test_stored_allow_edit_history_reads_as_policy(env: TestEnv) -> None:
    """A realm that stored the Zulip 8.0 boolean false reads as "none" with no migration;
    setting the policy replaces the old key."""
    await env.write_elsewhere(
        sa.update(realm_table)
        .where(realm_table.c.id == env.realm.id)
        .values(settings='{"allow_edit_history":false}')
    )
    state = await _state(env)
    assert state["realm_message_edit_history_visibility_policy"] == "none"
    assert state["realm_allow_edit_history"] is False
    # Asking for "none" again changes nothing.
    body = assert_success(await _patch(env, {"message_edit_history_visibility_policy": "none"}))
    assert "message_edit_history_visibility_policy" not in body
    body = assert_success(await _patch(env, {"message_edit_history_visibility_policy": "all"}))
    assert body["message_edit_history_visibility_policy"] == "updated"
    assert (await _realm(env)).settings == {}
    state = await _state(env)
    assert state["realm_message_edit_history_visibility_policy"] == "all"
    assert state["realm_allow_edit_history"] is True
