"""``POST /users/me/status``: status text, emoji and the deprecated ``away``."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from hubbub.db.tables import user_status
from tests.emoji_helpers import add_emoji, png_bytes
from tests.events.verify import verify_action
from tests.helpers import TestEnv, assert_error, assert_success

STATUS = "/users/me/status"


async def _status_row(env: TestEnv, user: str = "hamlet") -> tuple[str, str, str, str] | None:
    async with env.services.db.read() as conn:
        row = (
            await conn.execute(
                sa.select(
                    user_status.c.status_text,
                    user_status.c.emoji_name,
                    user_status.c.emoji_code,
                    user_status.c.reaction_type,
                ).where(user_status.c.user_profile_id == env.users[user].id)
            )
        ).first()
    return None if row is None else (row[0], row[1], row[2], row[3])


async def _state(env: TestEnv, user: str = "othello") -> dict[str, Any]:
    body = assert_success(
        await env.client(user).post(
            "/register", {"fetch_event_types": ["user_status", "user_settings"]}
        )
    )
    return body["user_status"]  # type: ignore[no-any-return]


async def test_set_text_then_emoji_then_clear(env: TestEnv) -> None:
    client = env.client("hamlet")
    key = str(env.users["hamlet"].id)
    assert_success(await client.post(STATUS, {"status_text": "  on vacation  "}))
    assert await _status_row(env) == ("on vacation", "", "", "unicode_emoji")
    assert await _state(env) == {key: {"status_text": "on vacation"}}
    # Only what is passed changes; a name alone is looked up.
    assert_success(await client.post(STATUS, {"emoji_name": "car"}))
    assert await _status_row(env) == ("on vacation", "car", "1f697", "unicode_emoji")
    assert await _state(env) == {
        key: {
            "status_text": "on vacation",
            "emoji_name": "car",
            "emoji_code": "1f697",
            "reaction_type": "unicode_emoji",
        }
    }
    assert_success(
        await client.post(
            STATUS,
            {"emoji_name": "zulip", "emoji_code": "zulip", "reaction_type": "zulip_extra_emoji"},
        )
    )
    assert await _status_row(env) == ("on vacation", "zulip", "zulip", "zulip_extra_emoji")
    assert_success(await client.post(STATUS, {"status_text": "", "emoji_name": ""}))
    assert await _status_row(env) == ("", "", "", "unicode_emoji")
    assert await _state(env) == {}


async def test_aliases_and_explicit_codes(env: TestEnv) -> None:
    client = env.client("hamlet")
    assert_success(await client.post(STATUS, {"emoji_name": "thumbs_up"}))
    assert await _status_row(env) == ("", "thumbs_up", "1f44d", "unicode_emoji")
    assert_success(
        await client.post(
            STATUS, {"emoji_name": "+1", "emoji_code": "1f44d", "reaction_type": "unicode_emoji"}
        )
    )
    assert await _status_row(env) == ("", "+1", "1f44d", "unicode_emoji")


async def test_errors_change_nothing(env: TestEnv) -> None:
    client = env.client("hamlet")
    assert_success(await client.post(STATUS, {"status_text": "busy"}))
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "Client did not pass any new values."),
        ({"emoji_code": "1f697"}, "Client did not pass any new values."),
        (
            {"status_text": "x", "emoji_code": "1f697"},
            "Client must pass emoji_name if they pass either emoji_code or reaction_type.",
        ),
        (
            {"status_text": "x", "reaction_type": "unicode_emoji"},
            "Client must pass emoji_name if they pass either emoji_code or reaction_type.",
        ),
        ({"status_text": "x" * 61}, "status_text is too long (limit: 60 characters)"),
        ({"emoji_name": "no_such_emoji"}, "Emoji 'no_such_emoji' does not exist"),
        ({"emoji_name": "car", "emoji_code": "fffff"}, "Invalid emoji code."),
        ({"emoji_name": "smile", "emoji_code": "1f697"}, "Invalid emoji name."),
        ({"emoji_name": "car", "reaction_type": "other"}, "Invalid emoji type."),
        # A Unicode emoji's code is no custom emoji's id.
        ({"emoji_name": "car", "reaction_type": "realm_emoji"}, "Invalid custom emoji."),
        (
            {"emoji_name": "zulip", "emoji_code": "zulipp", "reaction_type": "zulip_extra_emoji"},
            "Invalid emoji code.",
        ),
        (
            {"emoji_name": "zoolip", "emoji_code": "zulip", "reaction_type": "zulip_extra_emoji"},
            "Invalid emoji name.",
        ),
        ({"away": "yes"}, "away is not valid JSON"),
    ]
    for params, msg in cases:
        assert_error(await client.post(STATUS, params), msg)
    assert await _status_row(env) == ("busy", "", "", "unicode_emoji")
    # Stripped before its length is checked, as Zulip does.
    assert_success(await client.post(STATUS, {"status_text": " " + "x" * 60 + " "}))
    assert await _status_row(env) == ("x" * 60, "", "", "unicode_emoji")


async def test_away_is_presence_enabled(env: TestEnv) -> None:
    client = env.client("hamlet")
    key = str(env.users["hamlet"].id)
    assert_success(await client.post(STATUS, {"away": True}))
    assert await _status_row(env) == ("", "", "", "unicode_emoji")
    assert await _state(env) == {key: {"away": True}}
    body = assert_success(await client.post("/register", {"fetch_event_types": ["user_settings"]}))
    assert body["user_settings"]["presence_enabled"] is False
    assert_success(await client.post(STATUS, {"away": False, "status_text": "back"}))
    assert await _state(env) == {key: {"status_text": "back"}}
    body = assert_success(await client.post("/register", {"fetch_event_types": ["user_settings"]}))
    assert body["user_settings"]["presence_enabled"] is True


async def test_bots_cannot_set_a_status(env: TestEnv) -> None:
    bot = await env.create_user("bot@example.com", "Bot", bot_owner=env.users["hamlet"])
    resp = await env.client(bot).post(STATUS, {"status_text": "beep"})
    assert_error(resp, "This endpoint does not accept bot requests.")
    assert await _state(env) == {}


async def test_deactivated_users_are_left_out(env: TestEnv) -> None:
    assert_success(await env.client("hamlet").post(STATUS, {"status_text": "gone"}))
    async with env.services.write() as tx:
        await tx.conn.execute(
            sa.text("UPDATE user_profile SET is_active = false WHERE id = :id"),
            {"id": env.users["hamlet"].id},
        )
    assert await _state(env) == {}


async def test_custom_emoji(env: TestEnv) -> None:
    """The realm's custom emoji, named alone or with its id as code and ``realm_emoji`` as
    type (as Zulip's statuses take them)."""
    client = env.client("hamlet")
    key = str(env.users["hamlet"].id)
    party_parrot = (await add_emoji(env, "iago", "party_parrot"))["id"]
    assert_success(await client.post(STATUS, {"emoji_name": "party_parrot"}))
    assert await _status_row(env) == ("", "party_parrot", party_parrot, "realm_emoji")
    assert await _state(env) == {
        key: {
            "emoji_name": "party_parrot",
            "emoji_code": party_parrot,
            "reaction_type": "realm_emoji",
        }
    }
    assert_success(await client.post(STATUS, {"emoji_name": "car"}))
    assert_success(
        await client.post(
            STATUS,
            {
                "emoji_name": "party_parrot",
                "emoji_code": party_parrot,
                "reaction_type": "realm_emoji",
            },
        )
    )
    assert await _status_row(env) == ("", "party_parrot", party_parrot, "realm_emoji")
    # An active custom emoji's name wins over the Unicode emoji of that name.
    car = (await add_emoji(env, "iago", "car"))["id"]
    assert_success(await client.post(STATUS, {"emoji_name": "car"}))
    assert await _status_row(env) == ("", "car", car, "realm_emoji")
    # The Unicode one stays reachable by its code and type.
    assert_success(
        await client.post(
            STATUS, {"emoji_name": "car", "emoji_code": "1f697", "reaction_type": "unicode_emoji"}
        )
    )
    assert await _status_row(env) == ("", "car", "1f697", "unicode_emoji")


async def test_custom_emoji_errors_change_nothing(env: TestEnv) -> None:
    client = env.client("hamlet")
    party_parrot = (await add_emoji(env, "iago", "party_parrot"))["id"]
    assert_success(await client.post(STATUS, {"emoji_name": "party_parrot"}))
    zephyr = await env.create_realm("zephyr", "Zephyr")
    stranger = await env.create_user("stranger@zephyr.example", "Stranger", realm=zephyr)
    theirs = env.client(stranger, host="zephyr.localhost")
    assert_success(
        await theirs.request(
            "POST", "/realm/emoji/zephyr_logo", files={"f": ("x.png", png_bytes(), "image/png")}
        )
    )
    [elsewhere] = assert_success(await theirs.get("/realm/emoji"))["emoji"]
    cases: list[tuple[dict[str, str], str]] = [
        ({"emoji_code": "999999"}, "Invalid custom emoji."),
        ({"emoji_code": "0" + party_parrot}, "Invalid custom emoji."),
        ({"emoji_code": "party_parrot"}, "Invalid custom emoji."),
        ({"emoji_name": "zephyr_logo", "emoji_code": elsewhere}, "Invalid custom emoji."),
        # The id's emoji has another name.
        ({"emoji_name": "parrot", "emoji_code": party_parrot}, "Invalid custom emoji name."),
        ({"emoji_name": "car", "emoji_code": party_parrot}, "Invalid custom emoji name."),
    ]
    for params, msg in cases:
        request = {"emoji_name": "party_parrot", "reaction_type": "realm_emoji", **params}
        assert_error(await client.post(STATUS, request), msg)
    # Another organization's emoji is not named here.
    assert_error(
        await client.post(STATUS, {"emoji_name": "zephyr_logo"}),
        "Emoji 'zephyr_logo' does not exist",
    )
    assert await _status_row(env) == ("", "party_parrot", party_parrot, "realm_emoji")


async def test_deactivated_custom_emoji(env: TestEnv) -> None:
    client = env.client("hamlet")
    key = str(env.users["hamlet"].id)
    party_parrot = (await add_emoji(env, "iago", "party_parrot"))["id"]
    assert_success(await client.post(STATUS, {"emoji_name": "party_parrot"}))
    assert_success(await env.client("iago").delete("/realm/emoji/party_parrot"))
    # A status that shows it keeps it, as in Zulip.
    assert (await _state(env))[key]["emoji_code"] == party_parrot
    # It can no longer be chosen: by name it no longer exists; by its id it is refused.
    assert_error(
        await client.post(STATUS, {"emoji_name": "party_parrot"}),
        "Emoji 'party_parrot' does not exist",
    )
    assert_error(
        await client.post(
            STATUS,
            {
                "emoji_name": "party_parrot",
                "emoji_code": party_parrot,
                "reaction_type": "realm_emoji",
            },
        ),
        "This custom emoji has been deactivated.",
    )
    assert_success(await client.post(STATUS, {"status_text": "still here"}))
    assert await _status_row(env) == ("still here", "party_parrot", party_parrot, "realm_emoji")


async def test_custom_emoji_event(env: TestEnv) -> None:
    party_parrot = (await add_emoji(env, "iago", "party_parrot"))["id"]

    async def action() -> None:
        assert_success(await env.client("hamlet").post(STATUS, {"emoji_name": "party_parrot"}))

    [event] = await verify_action(env, env.users["othello"], action, num_events=1)
    assert {k: v for k, v in event.items() if k != "id"} == {
        "type": "user_status",
        "user_id": env.users["hamlet"].id,
        "emoji_name": "party_parrot",
        "emoji_code": party_parrot,
        "reaction_type": "realm_emoji",
    }
