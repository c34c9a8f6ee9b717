"""``PATCH /realm/user_settings_defaults``: the settings new users start from."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import sqlalchemy as sa

from hubbub.db.tables import realm
from hubbub.models import EmailVisibility, Realm
from hubbub.queries.realms import get_realm_by_subdomain
from hubbub.queries.user_settings import get_realm_user_defaults, get_user_settings
from hubbub.user_settings import (
    REALM_DEFAULT_EDITABLE,
    REALM_DEFAULT_KEYS,
    USER_SETTING_DEFAULTS,
)
from tests.helpers import TestEnv, assert_error, assert_success

URL = "/realm/user_settings_defaults"


async def _defaults(env: TestEnv) -> dict[str, Any]:
    async with env.services.db.read() as conn:
        return await get_realm_user_defaults(conn, env.realm.id)


ZULIP_DEFAULTS = {k: USER_SETTING_DEFAULTS[k] for k in REALM_DEFAULT_KEYS}


async def test_zulip_defaults_when_nothing_stored(env: TestEnv) -> None:
    assert await _defaults(env) == ZULIP_DEFAULTS
    # Zulip 10.2's keys: the settings of feature levels 245 to 350, without dense_mode.
    defaults = await _defaults(env)
    assert "dense_mode" not in defaults
    assert {
        "web_font_size_px": 16,
        "web_line_height_percent": 140,
        "receives_typing_notifications": True,
        "web_navigate_to_sent_message": True,
        "web_channel_default_view": 1,
        "web_animate_image_previews": "on_hover",
        "allow_private_data_export": False,
        "web_suggest_update_timezone": True,
        "hide_ai_features": False,
    }.items() <= defaults.items()


@pytest.mark.parametrize("user", ["desdemona", "iago"])
async def test_admins_change_defaults(env: TestEnv, user: str) -> None:
    assert_success(
        await env.client(user).patch(
            URL,
            {
                "enter_sends": True,
                "color_scheme": 2,
                "emojiset": "twitter",
                "default_view": "all_messages",
                "email_address_visibility": 3,
                "notification_sound": "ding",
                "email_notifications_batching_period_seconds": 600,
            },
        )
    )
    after = await _defaults(env)
    assert after == {
        **ZULIP_DEFAULTS,
        "enter_sends": True,
        "color_scheme": 2,
        "emojiset": "twitter",
        "web_home_view": "all_messages",
        "email_address_visibility": 3,
        "notification_sound": "ding",
        "email_notifications_batching_period_seconds": 600,
    }


@pytest.mark.parametrize("user", ["shiva", "hamlet", "polonius"])
async def test_others_are_refused(env: TestEnv, user: str) -> None:
    assert_error(
        await env.client(user).patch(URL, {"enter_sends": True}),
        "Must be an organization administrator",
        code="UNAUTHORIZED_PRINCIPAL",
    )
    assert await _defaults(env) == ZULIP_DEFAULTS


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"color_scheme": 7}, "Invalid color_scheme"),
        ({"emojiset": "apple"}, "Invalid emojiset"),
        ({"notification_sound": "bell"}, "Invalid notification sound 'bell'"),
        (
            {"email_notifications_batching_period_seconds": -5},
            "Invalid email batching period: -5 seconds",
        ),
        ({"email_address_visibility": 0}, "Invalid email_address_visibility"),
        ({"enter_sends": True, "user_list_style": 9}, "Invalid user_list_style"),
        ({"web_channel_default_view": 0}, "Invalid web_channel_default_view"),
        ({"web_animate_image_previews": "hover"}, "Invalid web_animate_image_previews"),
        ({"web_font_size_px": 40000}, "Invalid web_font_size_px"),
    ],
)
async def test_invalid_values(env: TestEnv, params: dict[str, Any], message: str) -> None:
    assert_error(await env.client("iago").patch(URL, params), message)
    assert await _defaults(env) == ZULIP_DEFAULTS


async def test_personal_settings_are_ignored(env: TestEnv) -> None:
    body = assert_success(
        await env.client("iago").patch(
            URL,
            {
                "timezone": "Asia/Kolkata",
                "default_language": "de",
                "enable_login_emails": False,
                "enable_marketing_emails": False,
                "full_name": "X",
                # Each user's own consent (feature level 293), and a setting removed at
                # feature level 364.
                "allow_private_data_export": True,
                "dense_mode": False,
            },
        )
    )
    assert body["ignored_parameters_unsupported"] == [
        "allow_private_data_export",
        "default_language",
        "dense_mode",
        "enable_login_emails",
        "enable_marketing_emails",
        "full_name",
        "timezone",
    ]
    assert await _defaults(env) == ZULIP_DEFAULTS


async def test_every_editable_setting_is_stored(env: TestEnv) -> None:
    for name in REALM_DEFAULT_EDITABLE:
        default = USER_SETTING_DEFAULTS[name]
        value: Any
        if isinstance(default, bool):
            value = not default
        elif name == "notification_sound":
            value = "chime"
        elif name == "email_notifications_batching_period_seconds":
            value = 60
        elif name == "web_home_view":
            value = "inbox"
        elif name == "emojiset":
            value = "text"
        elif name == "web_animate_image_previews":
            value = "always"
        elif name == "web_channel_default_view":
            value = 2
        else:
            value = 3 if default != 3 else 2
        assert_success(await env.client("iago").patch(URL, {name: value}))
        assert (await _defaults(env))[name] == value, name


async def test_new_users_start_from_defaults_existing_users_do_not_change(env: TestEnv) -> None:
    assert_success(
        await env.client("iago").patch(
            URL,
            {"twenty_four_hour_time": True, "emojiset": "text", "email_address_visibility": 4},
        )
    )
    # The realm's language is the new user's language.
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(realm)
            .where(realm.c.id == env.realm.id)
            .values(settings=orjson.dumps({"default_language": "fr"}).decode())
        )
    async with env.services.db.read() as conn:
        hamlet = await get_user_settings(conn, env.users["hamlet"].id)
    assert hamlet == USER_SETTING_DEFAULTS
    new = await env.create_user("yorick@example.com", "Yorick", realm=await _fresh_realm(env))
    async with env.services.db.read() as conn:
        settings = await get_user_settings(conn, new.id)
    assert settings == {
        **USER_SETTING_DEFAULTS,
        "twenty_four_hour_time": True,
        "emojiset": "text",
        "email_address_visibility": EmailVisibility.NOBODY,
        "default_language": "fr",
    }
    assert new.email == f"user{new.id}@hubbub.invalid"


async def _fresh_realm(env: TestEnv) -> Realm:
    """The realm as stored now (``env.realm`` predates the changes)."""
    async with env.services.db.read() as conn:
        found = await get_realm_by_subdomain(conn, "")
    assert found is not None
    return found
