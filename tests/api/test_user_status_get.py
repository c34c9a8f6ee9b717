"""``GET /users/{user_id}/status`` (feature level 262): one user's status, as ``/register``
``user_status`` shows it, with Zulip 10.2's errors."""

from __future__ import annotations

from typing import Any

from tests.helpers import TestEnv, assert_error, assert_success


async def _status(env: TestEnv, user: str, viewer: str = "othello") -> dict[str, Any]:
    url = f"/users/{env.users[user].id}/status"
    return dict(assert_success(await env.client(viewer).get(url))["status"])


async def _register_status(env: TestEnv, viewer: str = "othello") -> dict[str, Any]:
    body = assert_success(
        await env.client(viewer).post("/register", {"fetch_event_types": ["user_status"]})
    )
    return dict(body["user_status"])


async def test_status_as_register_shows_it(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    # Nothing set: an empty object, even for the user's own status.
    assert await _status(env, "hamlet") == {}
    assert await _status(env, "hamlet", viewer="hamlet") == {}
    assert_success(
        await env.client("hamlet").post(
            "/users/me/status",
            {"status_text": "On vacation", "emoji_name": "car", "emoji_code": "1f697"},
        )
    )
    expected = {
        "status_text": "On vacation",
        "emoji_name": "car",
        "emoji_code": "1f697",
        "reaction_type": "unicode_emoji",
    }
    assert await _status(env, "hamlet") == expected
    assert (await _register_status(env))[str(hamlet.id)] == expected
    # The deprecated ``away`` follows the presence setting.
    assert_success(await env.client("hamlet").patch("/settings", {"presence_enabled": False}))
    assert await _status(env, "hamlet", viewer="polonius") == {**expected, "away": True}
    assert (await _register_status(env))[str(hamlet.id)] == {**expected, "away": True}
    # Clearing the text and emoji leaves only ``away``.
    assert_success(
        await env.client("hamlet").post("/users/me/status", {"status_text": "", "emoji_name": ""})
    )
    assert await _status(env, "hamlet") == {"away": True}


async def test_presence_alone_is_not_a_status(env: TestEnv) -> None:
    """As in Zulip, a user who never set a status has none, whatever their presence."""
    assert_success(await env.client("hamlet").patch("/settings", {"presence_enabled": False}))
    assert await _status(env, "hamlet") == {}
    assert str(env.users["hamlet"].id) not in await _register_status(env)


async def test_errors(env: TestEnv) -> None:
    client = env.client("othello")
    assert_error(await client.get("/users/9999/status"), "No such user")
    other = await env.create_realm("other", "Other")
    stranger = await env.create_user("stranger@other.example", "Stranger", realm=other)
    assert_error(await client.get(f"/users/{stranger.id}/status"), "No such user")
    bot = await env.create_user("status-bot@example.com", "Bot", bot_owner=env.users["hamlet"])
    assert_error(await client.get(f"/users/{bot.id}/status"), "No such user")
    gone = await env.create_user("gone@example.com", "Gone")
    assert_success(await env.client("iago").delete(f"/users/{gone.id}"))
    assert_error(await client.get(f"/users/{gone.id}/status"), "User is deactivated")
