"""``PATCH /settings``: the user's own settings, name, password and email."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import sqlalchemy as sa

from hubbub.credentials import check_password
from hubbub.db.tables import realm, user_setting
from hubbub.models import EmailVisibility
from hubbub.queries.user_settings import get_user_settings
from hubbub.user_settings import SETTING_TYPES, USER_SETTING_DEFAULTS
from tests.helpers import TestEnv, assert_error, assert_success

# The settings Zulip added between feature levels 238 and 372, with Zulip 10.2's defaults.
NEW_SETTINGS: dict[str, Any] = {
    "web_font_size_px": 16,
    "web_line_height_percent": 140,
    "receives_typing_notifications": True,
    "web_navigate_to_sent_message": True,
    "web_channel_default_view": 1,
    "web_animate_image_previews": "on_hover",
    "allow_private_data_export": False,
    "web_suggest_update_timezone": True,
    "hide_ai_features": False,
}


async def _settings(env: TestEnv, user: str = "hamlet") -> dict[str, Any]:
    async with env.services.db.read() as conn:
        return await get_user_settings(conn, env.users[user].id)


def _other_value(name: str) -> Any:
    """A valid value different from Zulip's default."""
    default = USER_SETTING_DEFAULTS[name]
    if isinstance(default, bool):
        return not default
    choices = getattr(SETTING_TYPES[name], "__args__", ())
    if choices:
        return next(c for c in choices if c != default)
    return {
        "default_language": "de",
        "timezone": "Asia/Kolkata",
        "notification_sound": "ding",
        "email_notifications_batching_period_seconds": 300,
        "web_font_size_px": 14,
        "web_line_height_percent": 122,
    }[name]


async def test_defaults_when_nothing_stored(env: TestEnv) -> None:
    assert await _settings(env) == USER_SETTING_DEFAULTS


async def test_settings_added_after_zulip_8_have_zulip_10_defaults(env: TestEnv) -> None:
    settings = await _settings(env)
    assert {name: settings[name] for name in NEW_SETTINGS} == NEW_SETTINGS
    assert "dense_mode" not in settings


async def test_dense_mode_is_no_longer_a_setting(env: TestEnv) -> None:
    """Feature level 364 removed it: PATCH /settings ignores it, and an override stored
    before the upgrade neither shows nor survives the next write."""
    body = assert_success(await env.client("hamlet").patch("/settings", {"dense_mode": False}))
    assert body["ignored_parameters_unsupported"] == ["dense_mode"]
    hamlet = env.users["hamlet"]
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.insert(user_setting).values(
                user_profile_id=hamlet.id, settings='{"dense_mode":false}'
            )
        )
    assert await _settings(env) == USER_SETTING_DEFAULTS
    assert_success(await env.client("hamlet").patch("/settings", {"enter_sends": True}))
    async with env.services.db.read() as conn:
        stored = await conn.scalar(
            sa.select(user_setting.c.settings).where(user_setting.c.user_profile_id == hamlet.id)
        )
    assert stored is not None
    assert orjson.loads(stored) == {"enter_sends": True}


@pytest.mark.parametrize("name", sorted(USER_SETTING_DEFAULTS))
async def test_every_setting_can_change(env: TestEnv, name: str) -> None:
    value = _other_value(name)
    assert_success(await env.client("hamlet").patch("/settings", {name: value}))
    after = await _settings(env)
    assert after[name] == value
    assert {k: v for k, v in after.items() if k != name} == {
        k: v for k, v in USER_SETTING_DEFAULTS.items() if k != name
    }
    # Back to the default: stored as "no override".
    default = USER_SETTING_DEFAULTS[name]
    assert_success(await env.client("hamlet").patch("/settings", {name: default}))
    assert await _settings(env) == USER_SETTING_DEFAULTS
    # Othello is untouched.
    assert await _settings(env, "othello") == USER_SETTING_DEFAULTS


async def test_several_settings_and_ignored_parameters(env: TestEnv) -> None:
    body = assert_success(
        await env.client("hamlet").patch(
            "/settings",
            {"color_scheme": 2, "enter_sends": True, "emojiset": "text", "nonsense": 1},
        )
    )
    assert body["ignored_parameters_unsupported"] == ["nonsense"]
    after = await _settings(env)
    assert (after["color_scheme"], after["enter_sends"], after["emojiset"]) == (2, True, "text")


async def test_legacy_names_for_home_view(env: TestEnv) -> None:
    assert_success(
        await env.client("hamlet").patch(
            "/settings", {"default_view": "inbox", "escape_navigates_to_default_view": False}
        )
    )
    after = await _settings(env)
    assert after["web_home_view"] == "inbox"
    assert after["web_escape_navigates_to_home_view"] is False
    assert_error(
        await env.client("hamlet").patch(
            "/settings", {"default_view": "inbox", "web_home_view": "inbox"}
        ),
        "Can't decide between 'web_home_view' and 'default_view' arguments",
        code="REQUEST_CONFUSING_VAR",
    )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"color_scheme": 4}, "Invalid color_scheme"),
        ({"color_scheme": '"dark"'}, "color_scheme is not an integer"),
        ({"web_home_view": "stream"}, "Invalid web_home_view"),
        ({"emojiset": "apple"}, "Invalid emojiset"),
        ({"demote_inactive_streams": 0}, "Invalid demote_inactive_streams"),
        ({"user_list_style": 4}, "Invalid user_list_style"),
        ({"desktop_icon_count_display": 5}, "Invalid desktop_icon_count_display"),
        ({"automatically_follow_topics_policy": 5}, "Invalid automatically_follow_topics_policy"),
        ({"email_address_visibility": 6}, "Invalid email_address_visibility"),
        ({"web_mark_read_on_scroll_policy": 4}, "Invalid web_mark_read_on_scroll_policy"),
        # Values 3 and 4 came after Zulip 10.2.
        ({"web_channel_default_view": 3}, "Invalid web_channel_default_view"),
        ({"web_animate_image_previews": "sometimes"}, "Invalid web_animate_image_previews"),
        ({"web_font_size_px": '"big"'}, "web_font_size_px is not an integer"),
        ({"web_font_size_px": -1}, "Invalid web_font_size_px"),
        ({"web_line_height_percent": 40000}, "Invalid web_line_height_percent"),
        ({"hide_ai_features": "yes"}, "hide_ai_features is not valid JSON"),
        ({"enter_sends": "yes"}, "enter_sends is not valid JSON"),
        ({"enter_sends": 1}, "enter_sends is not a boolean"),
        ({"default_language": "xx"}, "Invalid default_language"),
        ({"notification_sound": "bell"}, "Invalid notification sound 'bell'"),
        (
            {"email_notifications_batching_period_seconds": 0},
            "Invalid email batching period: 0 seconds",
        ),
        (
            {"email_notifications_batching_period_seconds": 7 * 24 * 3600 + 1},
            "Invalid email batching period: 604801 seconds",
        ),
        ({"timezone": "Mars/Olympus"}, "timezone is not a recognized time zone"),
        # One bad value fails the whole request: the valid one is not stored either.
        ({"enter_sends": True, "color_scheme": 9}, "Invalid color_scheme"),
        ({"enter_sends": True, "default_language": "xx"}, "Invalid default_language"),
    ],
)
async def test_invalid_values(env: TestEnv, params: dict[str, Any], message: str) -> None:
    assert_error(await env.client("hamlet").patch("/settings", params), message)
    assert await _settings(env) == USER_SETTING_DEFAULTS


async def test_sound_none_and_batching_limits(env: TestEnv) -> None:
    client = env.client("hamlet")
    assert_success(await client.patch("/settings", {"notification_sound": "none"}))
    assert_success(
        await client.patch("/settings", {"email_notifications_batching_period_seconds": 604800})
    )
    after = await _settings(env)
    assert after["notification_sound"] == "none"
    assert after["email_notifications_batching_period_seconds"] == 604800


async def test_timezone_and_email_visibility_are_profile_columns(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    assert_success(
        await env.client("hamlet").patch(
            "/settings", {"timezone": "Europe/Copenhagen", "email_address_visibility": 4}
        )
    )
    fresh = await env.reload(hamlet)
    assert fresh.timezone == "Europe/Copenhagen"
    assert fresh.email_address_visibility == EmailVisibility.NOBODY
    assert fresh.email == f"user{hamlet.id}@hubbub.invalid"
    assert fresh.delivery_email == "hamlet@example.com"
    # Others now see the dummy address and no real one.
    body = assert_success(await env.client("othello").get(f"/users/{hamlet.id}"))
    assert body["user"]["email"] == fresh.email
    assert body["user"]["delivery_email"] is None
    # Still logs in with the real address and the same key.
    assert_success(await env.client(fresh).get("/users/me"))
    # Back to everyone: the real address again.
    assert_success(await env.client(fresh).patch("/settings", {"email_address_visibility": 1}))
    assert (await env.reload(hamlet)).email == "hamlet@example.com"


async def test_full_name(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    client = env.client("hamlet")
    assert_success(await client.patch("/settings", {"full_name": "  Prince Hamlet "}))
    assert (await env.reload(hamlet)).full_name == "Prince Hamlet"
    assert_error(await client.patch("/settings", {"full_name": "x"}), "Name too short!")
    assert_error(await client.patch("/settings", {"full_name": "a" * 101}), "Name too long!")
    assert_error(
        await client.patch("/settings", {"full_name": "Bad@name"}), "Invalid characters in name!"
    )
    # A failing name change keeps the other changes of the request from happening.
    assert_error(
        await client.patch("/settings", {"full_name": "x", "enter_sends": True}),
        "Name too short!",
    )
    assert (await _settings(env))["enter_sends"] is False
    assert (await env.reload(hamlet)).full_name == "Prince Hamlet"


async def test_full_name_locked_is_ignored_for_members(env: TestEnv) -> None:
    # Set in the realm's stored settings directly, so this test does not depend on
    # PATCH /realm.
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(realm)
            .where(realm.c.id == env.realm.id)
            .values(settings=orjson.dumps({"name_changes_disabled": True}).decode())
        )
    assert_success(await env.client("hamlet").patch("/settings", {"full_name": "New Name"}))
    assert (await env.reload(env.users["hamlet"])).full_name == "Hamlet"
    assert_success(await env.client("iago").patch("/settings", {"full_name": "Iago II"}))
    assert (await env.reload(env.users["iago"])).full_name == "Iago II"


async def test_password_change(env: TestEnv) -> None:
    user = await env.create_user("yorick@example.com", "Yorick", password="alas-poor")
    client = env.client(user)
    assert_error(
        await client.patch("/settings", {"old_password": "wrong", "new_password": "zq7pw4kx"}),
        "Wrong password!",
    )
    assert_error(await client.patch("/settings", {"new_password": "zq7pw4kx"}), "Wrong password!")
    assert_error(
        await client.patch("/settings", {"old_password": "alas-poor", "new_password": "abc"}),
        "New password is too weak!",
    )
    assert check_password("alas-poor", (await env.reload(user)).password_hash)
    assert_success(
        await client.patch("/settings", {"old_password": "alas-poor", "new_password": "zq7pw4kx"})
    )
    fresh = await env.reload(user)
    assert check_password("zq7pw4kx", fresh.password_hash)
    assert not check_password("alas-poor", fresh.password_hash)
    # Without a password (the test users have none), nothing matches.
    assert_error(
        await env.client("hamlet").patch(
            "/settings", {"old_password": "", "new_password": "zq7pw4kx"}
        ),
        "Wrong password!",
    )


async def test_email_change(env: TestEnv) -> None:
    client = env.client("hamlet")
    # The same address is no change at all.
    assert_success(await client.patch("/settings", {"email": " hamlet@example.com "}))
    assert_error(await client.patch("/settings", {"email": "not-an-email"}), "Invalid address.")
    assert_error(
        await client.patch("/settings", {"email": "othello@example.com"}),
        "Email is already in use.",
    )
    assert_error(
        await client.patch("/settings", {"email": "prince@example.com"}),
        "Email address changes need a confirmation email, which this server cannot send.",
    )
    assert (await env.reload(env.users["hamlet"])).delivery_email == "hamlet@example.com"


async def test_bots_are_refused(env: TestEnv) -> None:
    bot = await env.create_user("helper-bot@example.com", "Helper", bot_owner=env.users["hamlet"])
    assert_error(
        await env.client(bot).patch("/settings", {"enter_sends": True}),
        "This endpoint does not accept bot requests.",
    )


async def test_unchanged_values_succeed(env: TestEnv) -> None:
    assert_success(
        await env.client("hamlet").patch(
            "/settings", {"enter_sends": False, "color_scheme": 1, "timezone": ""}
        )
    )
    assert await _settings(env) == USER_SETTING_DEFAULTS


async def test_legacy_aliases(env: TestEnv) -> None:
    """``/settings/display`` and ``/settings/notifications`` are aliases of ``/settings``
    since feature level 80; the official client still uses the latter."""
    client = env.client("hamlet")
    assert_success(await client.patch("/settings/display", {"fluid_layout_width": True}))
    assert_success(await client.patch("/settings/notifications", {"enable_sounds": False}))
    after = await _settings(env)
    assert (after["fluid_layout_width"], after["enable_sounds"]) == (True, False)
