"""``user_settings``, legacy settings events and ``realm_user_settings_defaults``: applying
them to old state gives the new state, for modern and legacy clients."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.events.verify import register, verify_action
from tests.helpers import TestEnv, assert_success, without_id

MODERN = {"client_capabilities": {"user_settings_object": True}}


def _patch(
    env: TestEnv, params: dict[str, Any], user: str = "hamlet", url: str = "/settings"
) -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        assert_success(await env.client(user).patch(url, params))

    return action


async def test_register_state_keys(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    legacy = await register(env, hamlet)
    assert legacy["user_settings"]["emojiset"] == "google"
    assert legacy["twenty_four_hour_time"] is False
    assert legacy["enable_sounds"] is True
    assert legacy["timezone"] == ""
    assert legacy["available_notification_sounds"] == ["chime", "ding", "zulip"]
    assert legacy["realm_user_settings_defaults"]["default_language"] == "en"
    assert legacy["drafts"] == []
    modern = await register(env, hamlet, **MODERN)
    assert "twenty_four_hour_time" not in modern
    assert "enable_sounds" not in modern
    assert "emojiset_choices" in modern["user_settings"]
    only = await register(env, hamlet, fetch_event_types=["update_global_notifications"])
    assert "enable_sounds" in only and "twenty_four_hour_time" not in only
    assert "user_settings" not in only


async def test_modern_setting_sends_only_user_settings(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    events = await verify_action(env, hamlet, _patch(env, {"user_list_style": 3}), num_events=1)
    assert [without_id(e) for e in events] == [
        {"type": "user_settings", "op": "update", "property": "user_list_style", "value": 3}
    ]
    # Nobody else hears of it.
    await verify_action(
        env, env.users["othello"], _patch(env, {"user_list_style": 1}), num_events=0
    )


async def test_display_setting_legacy_and_modern(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    events = await verify_action(
        env, hamlet, _patch(env, {"high_contrast_mode": True}), num_events=2
    )
    assert [without_id(e) for e in events] == [
        {"type": "user_settings", "op": "update", "property": "high_contrast_mode", "value": True},
        {
            "type": "update_display_settings",
            "user": "hamlet@example.com",
            "setting_name": "high_contrast_mode",
            "setting": True,
        },
    ]
    await verify_action(
        env, hamlet, _patch(env, {"high_contrast_mode": False}), num_events=1, **MODERN
    )


async def test_notification_setting_legacy_and_modern(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    events = await verify_action(env, hamlet, _patch(env, {"enable_sounds": False}), num_events=2)
    assert [without_id(e) for e in events][1] == {
        "type": "update_global_notifications",
        "user": "hamlet@example.com",
        "notification_name": "enable_sounds",
        "setting": False,
    }
    await verify_action(env, hamlet, _patch(env, {"enable_sounds": True}), num_events=1, **MODERN)


async def test_default_language_names_the_language(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    events = await verify_action(env, hamlet, _patch(env, {"default_language": "de"}), num_events=2)
    assert events[0]["language_name"] == "Deutsch"
    assert events[1]["language_name"] == "Deutsch"
    assert events[1]["setting_name"] == "default_language"


async def test_several_settings_in_one_request(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    params = {"enter_sends": True, "wildcard_mentions_notify": False, "send_read_receipts": False}
    events = await verify_action(env, hamlet, _patch(env, params), num_events=5)
    assert [e["type"] for e in events] == [
        "user_settings",
        "update_display_settings",
        "user_settings",
        "update_global_notifications",
        "user_settings",
    ]


async def test_timezone_tells_everyone(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    events = await verify_action(
        env, hamlet, _patch(env, {"timezone": "Asia/Kolkata"}), num_events=3
    )
    assert [without_id(e) for e in events][2] == {
        "type": "realm_user",
        "op": "update",
        "person": {"user_id": hamlet.id, "email": hamlet.email, "timezone": "Asia/Kolkata"},
    }
    assert events[1]["setting_name"] == "timezone"
    events = await verify_action(
        env, env.users["othello"], _patch(env, {"timezone": "Europe/Oslo"}), num_events=1
    )
    assert events[0]["person"]["timezone"] == "Europe/Oslo"


@pytest.mark.parametrize("client_gravatar", [True, False])
async def test_email_visibility_hidden_then_shown(env: TestEnv, client_gravatar: bool) -> None:
    hamlet = env.users["hamlet"]
    # Hamlet: the setting, the new API email, the avatar.
    events = await verify_action(
        env,
        hamlet,
        _patch(env, {"email_address_visibility": 4}),
        num_events=3,
        client_gravatar=client_gravatar,
    )
    dummy = f"user{hamlet.id}@hubbub.invalid"
    assert events[1]["person"] == {"user_id": hamlet.id, "new_email": dummy}
    assert set(events[2]["person"]) == {
        "user_id",
        "avatar_source",
        "avatar_url",
        "avatar_url_medium",
        "avatar_version",
    }
    # Othello also loses access to the real address; then regains it.
    events = await verify_action(
        env,
        env.users["othello"],
        _patch(env, {"email_address_visibility": 1}),
        num_events=3,
        client_gravatar=client_gravatar,
    )
    assert events[0]["person"] == {"user_id": hamlet.id, "delivery_email": "hamlet@example.com"}
    assert events[1]["person"] == {"user_id": hamlet.id, "new_email": "hamlet@example.com"}
    # Always the URL, as in Zulip; a client with client_gravatar nulls it itself.
    assert events[2]["person"]["avatar_url"].startswith("https://secure.gravatar.com/")


async def test_email_visibility_between_hidden_levels(env: TestEnv) -> None:
    assert_success(await env.client("hamlet").patch("/settings", {"email_address_visibility": 4}))
    # Administrators only: the API email stays the dummy; only admins gain access.
    events = await verify_action(
        env, env.users["iago"], _patch(env, {"email_address_visibility": 3}), num_events=1
    )
    assert events[0]["person"] == {
        "user_id": env.users["hamlet"].id,
        "delivery_email": "hamlet@example.com",
    }
    await verify_action(
        env, env.users["othello"], _patch(env, {"email_address_visibility": 2}), num_events=1
    )
    await verify_action(
        env, env.users["polonius"], _patch(env, {"email_address_visibility": 5}), num_events=0
    )


async def test_full_name_change(env: TestEnv) -> None:
    events = await verify_action(
        env, env.users["othello"], _patch(env, {"full_name": "Prince Hamlet"}), num_events=1
    )
    assert events[0]["person"] == {"user_id": env.users["hamlet"].id, "full_name": "Prince Hamlet"}


async def test_realm_defaults_event_to_everyone(env: TestEnv) -> None:
    url = "/realm/user_settings_defaults"
    for user in ("hamlet", "iago", "polonius"):
        events = await verify_action(
            env,
            env.users[user],
            _patch(env, {"emojiset": "text" if user != "iago" else "twitter"}, "iago", url),
            num_events=1,
        )
    assert [without_id(e) for e in events] == [
        {
            "type": "realm_user_settings_defaults",
            "op": "update",
            "property": "emojiset",
            "value": "text",
        }
    ]
    await verify_action(
        env,
        env.users["hamlet"],
        _patch(env, {"email_address_visibility": 2, "enter_sends": True}, "iago", url),
        num_events=2,
    )


async def test_unchanged_settings_send_nothing(env: TestEnv) -> None:
    await verify_action(
        env,
        env.users["hamlet"],
        _patch(env, {"enter_sends": False, "timezone": "", "emojiset": "google"}),
        num_events=0,
    )


# The settings Zulip added between feature levels 238 and 372, with a value other than
# Zulip 10.2's default: each is modern (no legacy event) and in both state objects.
NEW_SETTING_VALUES: dict[str, Any] = {
    "web_font_size_px": 14,
    "web_line_height_percent": 122,
    "receives_typing_notifications": False,
    "web_navigate_to_sent_message": False,
    "web_channel_default_view": 2,
    "web_animate_image_previews": "always",
    "allow_private_data_export": True,
    "web_suggest_update_timezone": False,
    "hide_ai_features": True,
}


@pytest.mark.parametrize("name", sorted(NEW_SETTING_VALUES))
async def test_new_setting_sends_only_user_settings(env: TestEnv, name: str) -> None:
    value = NEW_SETTING_VALUES[name]
    events = await verify_action(env, env.users["hamlet"], _patch(env, {name: value}), num_events=1)
    assert [without_id(e) for e in events] == [
        {"type": "user_settings", "op": "update", "property": name, "value": value}
    ]


async def test_new_settings_in_realm_defaults_events(env: TestEnv) -> None:
    """Every new setting but ``allow_private_data_export`` (each user's own consent) is a
    realm default administrators change."""
    url = "/realm/user_settings_defaults"
    params = {k: v for k, v in NEW_SETTING_VALUES.items() if k != "allow_private_data_export"}
    events = await verify_action(
        env, env.users["hamlet"], _patch(env, params, "iago", url), num_events=len(params)
    )
    assert sorted(e["property"] for e in events) == sorted(params)
    state = await register(env, env.users["hamlet"])
    assert params.items() <= state["realm_user_settings_defaults"].items()
    assert state["realm_user_settings_defaults"]["allow_private_data_export"] is False


async def test_dense_mode_is_gone_from_register(env: TestEnv) -> None:
    """Feature level 364: neither the objects nor the legacy top-level keys have it."""
    hamlet = env.users["hamlet"]
    legacy = await register(env, hamlet)
    assert "dense_mode" not in legacy
    assert "dense_mode" not in legacy["user_settings"]
    assert "dense_mode" not in legacy["realm_user_settings_defaults"]
    # Newer settings never reach the legacy top level either.
    assert "web_font_size_px" not in legacy and "web_font_size_px" in legacy["user_settings"]
    await verify_action(env, hamlet, _patch(env, {"dense_mode": False}), num_events=0)


async def test_typing_skips_users_who_turned_it_off(env: TestEnv) -> None:
    """Feature level 253: ``receives_typing_notifications`` off means no typing events, for
    direct messages (the typist included) and streams alike."""
    hamlet, othello = env.users["hamlet"], env.users["othello"]
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    stream_params = {"type": "stream", "op": "start", "stream_id": denmark.id, "topic": "t"}
    capable = {"client_capabilities": {"stream_typing_notifications": True}}

    def typing(user: str, params: dict[str, Any]) -> Callable[[], Awaitable[None]]:
        async def action() -> None:
            assert_success(await env.client(user).post("/typing", params))

        return action

    direct = {"op": "start", "to": [othello.id]}
    await verify_action(env, othello, typing("hamlet", direct), num_events=1)
    assert_success(
        await env.client("othello").patch("/settings", {"receives_typing_notifications": False})
    )
    await verify_action(env, othello, typing("hamlet", direct), num_events=0)
    await verify_action(env, othello, typing("hamlet", stream_params), num_events=0, **capable)
    # The others still hear of it; and a user who turned it off may still type.
    await verify_action(env, hamlet, typing("hamlet", direct), num_events=1)
    await verify_action(env, hamlet, typing("hamlet", stream_params), num_events=1, **capable)
    await verify_action(
        env, hamlet, typing("othello", {"op": "stop", "to": [hamlet.id]}), num_events=1
    )
    assert_success(
        await env.client("othello").patch("/settings", {"receives_typing_notifications": True})
    )
    await verify_action(env, othello, typing("hamlet", direct), num_events=1)
