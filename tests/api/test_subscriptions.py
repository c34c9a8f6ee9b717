"""``/users/me/subscriptions`` (list, subscribe and create, unsubscribe) and
``GET /users/{user_id}/subscriptions/{stream_id}``."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from hubbub.db.tables import stream, subscription
from tests.group_settings_helpers import system_group_id
from tests.helpers import TestEnv, assert_error, assert_success


async def _stream_count(env: TestEnv) -> int:
    async with env.services.db.read() as conn:
        return int(await conn.scalar(sa.select(sa.func.count()).select_from(stream)) or 0)


async def _subscription_count(env: TestEnv) -> int:
    async with env.services.db.read() as conn:
        return int(
            await conn.scalar(
                sa.select(sa.func.count()).select_from(subscription).where(subscription.c.active)
            )
            or 0
        )


def _names(body: dict[str, Any]) -> list[str]:
    return [s["name"] for s in body["subscriptions"]]


async def test_subscribe_creates_stream_and_lists_it(env: TestEnv) -> None:
    hamlet = env.client("hamlet")
    body = assert_success(
        await hamlet.post(
            "/users/me/subscriptions",
            {"subscriptions": [{"name": "  Denmark ", "description": "Line one\nline two"}]},
        )
    )
    assert body["subscribed"] == {"hamlet@example.com": ["Denmark"]}
    assert body["already_subscribed"] == {}
    assert "unauthorized" not in body
    listed = assert_success(await hamlet.get("/users/me/subscriptions"))
    [sub] = listed["subscriptions"]
    assert sub["name"] == "Denmark" and sub["description"] == "Line one line two"
    assert sub["rendered_description"] == "<p>Line one line two</p>"
    assert sub["invite_only"] is False and sub["history_public_to_subscribers"] is True
    assert sub["is_muted"] is False and sub["in_home_view"] is True
    assert sub["color"].startswith("#") and "subscribers" not in sub
    with_subs = assert_success(
        await hamlet.get("/users/me/subscriptions", {"include_subscribers": True})
    )
    assert with_subs["subscriptions"][0]["subscribers"] == [env.users["hamlet"].id]
    # The second time it is "already subscribed", matched case-insensitively.
    again = assert_success(
        await hamlet.post("/users/me/subscriptions", {"subscriptions": [{"name": "denmark"}]})
    )
    assert again == {
        "result": "success",
        "msg": "",
        "subscribed": {},
        "already_subscribed": {"hamlet@example.com": ["Denmark"]},
    }


async def test_subscribe_others_with_principals(env: TestEnv) -> None:
    othello, polonius = env.users["othello"], env.users["polonius"]
    body = assert_success(
        await env.client("hamlet").post(
            "/users/me/subscriptions",
            {"subscriptions": [{"name": "Verona"}], "principals": [othello.id, polonius.id]},
        )
    )
    assert body["subscribed"] == {
        "othello@example.com": ["Verona"],
        "polonius@example.com": ["Verona"],
    }
    by_email = assert_success(
        await env.client("iago").post(
            "/users/me/subscriptions",
            {"subscriptions": [{"name": "Verona"}], "principals": ["hamlet@example.com"]},
        )
    )
    assert by_email["subscribed"] == {"hamlet@example.com": ["Verona"]}
    # Each user gets a colour of their own; the same user's streams get different colours.
    await env.subscribe("hamlet", "Rome")
    colors = [
        s["color"]
        for s in assert_success(await env.client("hamlet").get("/users/me/subscriptions"))[
            "subscriptions"
        ]
    ]
    assert len(set(colors)) == 2


async def test_principal_errors_change_nothing(env: TestEnv) -> None:
    before = (await _stream_count(env), await _subscription_count(env))
    hamlet = env.client("hamlet")
    assert_error(
        await hamlet.post(
            "/users/me/subscriptions", {"subscriptions": [{"name": "X"}], "principals": [9999]}
        ),
        "No such user",
    )
    assert_error(
        await hamlet.post(
            "/users/me/subscriptions",
            {"subscriptions": [{"name": "X"}], "principals": ["nobody@example.com"]},
        ),
        "No such user",
    )
    # Guests may not subscribe others (can_add_subscribers_group: members).
    assert_error(
        await env.client("polonius").post(
            "/users/me/subscriptions",
            {"subscriptions": [{"name": "X"}], "principals": [env.users["hamlet"].id]},
        ),
        "Insufficient permission",
    )
    assert before == (await _stream_count(env), await _subscription_count(env))


async def test_stream_name_and_description_validation(env: TestEnv) -> None:
    hamlet = env.client("hamlet")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"subscriptions": [{"name": "   "}]}, "Stream name can't be empty!"),
        ({"subscriptions": [{"name": "x" * 61}]}, "Stream name too long (limit: 60 characters)."),
        (
            {"subscriptions": [{"name": "bad\x01name"}]},
            "Invalid character in stream name, at position 4!",
        ),
        (
            {"subscriptions": [{"name": "ok", "description": "d" * 1025}]},
            "description is too long (limit: 1024 characters)",
        ),
        ({"subscriptions": [{"description": "no name"}]}, "subscriptions[0] key is missing: name"),
        ({"subscriptions": ["Denmark"]}, "subscriptions[0] is not a dict"),
        (
            {"subscriptions": [{"name": "ok"}], "stream_post_policy": 9},
            "Invalid stream_post_policy",
        ),
    ]
    for params, msg in cases:
        assert_error(await hamlet.post("/users/me/subscriptions", params), msg)
    assert_error(
        await hamlet.post("/users/me/subscriptions", {}),
        "Missing 'subscriptions' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    # Exactly 60 characters is fine.
    assert_success(
        await hamlet.post("/users/me/subscriptions", {"subscriptions": [{"name": "y" * 60}]})
    )
    assert await _stream_count(env) == 1


async def test_private_streams_need_access(env: TestEnv) -> None:
    await env.subscribe("othello", "Secret", invite_only=True)
    hamlet = env.client("hamlet")
    assert_error(
        await hamlet.post("/users/me/subscriptions", {"subscriptions": [{"name": "Secret"}]}),
        "Unable to access stream (Secret).",
    )
    body = assert_success(
        await hamlet.post(
            "/users/me/subscriptions",
            {
                "subscriptions": [{"name": "Secret"}, {"name": "Open"}],
                "authorization_errors_fatal": False,
            },
        )
    )
    assert body["unauthorized"] == ["Secret"]
    assert body["subscribed"] == {"hamlet@example.com": ["Open"]}
    # Subscribers may invite others; administrators may join.
    assert_success(
        await env.client("othello").post(
            "/users/me/subscriptions",
            {"subscriptions": [{"name": "Secret"}], "principals": [env.users["hamlet"].id]},
        )
    )
    assert_success(
        await env.client("iago").post(
            "/users/me/subscriptions", {"subscriptions": [{"name": "Secret"}]}
        )
    )


async def test_guests_join_only_web_public_streams(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Public")
    polonius = env.client("polonius")
    assert_error(
        await polonius.post("/users/me/subscriptions", {"subscriptions": [{"name": "Public"}]}),
        "Unable to access stream (Public).",
    )
    # Guests cannot create streams either (can_create_public_channel_group: members).
    assert_error(
        await polonius.post("/users/me/subscriptions", {"subscriptions": [{"name": "Mine"}]}),
        "Insufficient permission",
    )


async def test_create_private_and_options(env: TestEnv) -> None:
    body = assert_success(
        await env.client("iago").post(
            "/users/me/subscriptions",
            {
                "subscriptions": [{"name": "Council"}],
                "invite_only": True,
                "history_public_to_subscribers": True,
                "stream_post_policy": 2,
                "can_remove_subscribers_group": await system_group_id(env, "role:moderators"),
            },
        )
    )
    assert body["subscribed"] == {"iago@example.com": ["Council"]}
    [sub] = assert_success(await env.client("iago").get("/users/me/subscriptions"))["subscriptions"]
    assert sub["invite_only"] is True and sub["history_public_to_subscribers"] is True
    assert sub["stream_post_policy"] == 2 and sub["is_announcement_only"] is True
    assert sub["can_remove_subscribers_group"] == await system_group_id(env, "role:moderators")
    assert sub["message_retention_days"] is None


async def test_create_private_defaults_to_unshared_history(env: TestEnv) -> None:
    await env.client("hamlet").post(
        "/users/me/subscriptions", {"subscriptions": [{"name": "P"}], "invite_only": True}
    )
    [sub] = assert_success(await env.client("hamlet").get("/users/me/subscriptions"))[
        "subscriptions"
    ]
    assert sub["invite_only"] is True and sub["history_public_to_subscribers"] is False


async def test_message_retention_days_owner_only(env: TestEnv) -> None:
    assert_error(
        await env.client("iago").post(
            "/users/me/subscriptions",
            {"subscriptions": [{"name": "R"}], "message_retention_days": "unlimited"},
        ),
        "Must be an organization owner",
    )
    assert_success(
        await env.client("desdemona").post(
            "/users/me/subscriptions",
            {"subscriptions": [{"name": "R"}], "message_retention_days": "unlimited"},
        )
    )
    assert_success(
        await env.client("desdemona").post(
            "/users/me/subscriptions",
            {"subscriptions": [{"name": "S"}], "message_retention_days": 30},
        )
    )
    subs = assert_success(await env.client("desdemona").get("/users/me/subscriptions"))
    assert [s["message_retention_days"] for s in subs["subscriptions"]] == [-1, 30]
    assert_error(
        await env.client("desdemona").post(
            "/users/me/subscriptions",
            {"subscriptions": [{"name": "T"}], "message_retention_days": "soon"},
        ),
        "Bad value for 'message_retention_days': soon",
    )


async def test_can_remove_subscribers_group_must_be_an_allowed_group(env: TestEnv) -> None:
    # Since feature level 320 any group but role:internet will do.
    for name in ("role:internet",):
        assert_error(
            await env.client("iago").post(
                "/users/me/subscriptions",
                {
                    "subscriptions": [{"name": "G"}],
                    "can_remove_subscribers_group_id": await system_group_id(env, name),
                },
            ),
            f"'can_remove_subscribers_group' setting cannot be set to '{name}' group.",
        )
    assert_error(
        await env.client("iago").post(
            "/users/me/subscriptions",
            {"subscriptions": [{"name": "G"}], "can_remove_subscribers_group": 99999},
        ),
        "Invalid user group",
    )
    assert await _stream_count(env) == 0


async def test_unsubscribe(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    hamlet = env.client("hamlet")
    body = assert_success(
        await hamlet.delete("/users/me/subscriptions", {"subscriptions": ["Denmark"]})
    )
    assert body["removed"] == ["Denmark"] and body["not_removed"] == []
    body = assert_success(
        await hamlet.delete("/users/me/subscriptions", {"subscriptions": ["Denmark"]})
    )
    assert body["removed"] == [] and body["not_removed"] == ["Denmark"]
    assert _names(assert_success(await hamlet.get("/users/me/subscriptions"))) == []
    error = assert_error(
        await hamlet.delete("/users/me/subscriptions", {"subscriptions": ["Nowhere"]}),
        "Stream 'Nowhere' does not exist",
        code="STREAM_DOES_NOT_EXIST",
    )
    assert error["stream"] == "Nowhere"
    # Re-subscribing keeps the earlier settings (the row is reactivated).
    await env.subscribe("hamlet", "Denmark")
    assert _names(assert_success(await hamlet.get("/users/me/subscriptions"))) == ["Denmark"]


async def test_removing_others_needs_permission(env: TestEnv) -> None:
    await env.subscribe("othello", "Denmark")
    othello = env.users["othello"]
    assert_error(
        await env.client("hamlet").delete(
            "/users/me/subscriptions", {"subscriptions": ["Denmark"], "principals": [othello.id]}
        ),
        "Insufficient permission",
    )
    assert await _subscription_count(env) == 1
    body = assert_success(
        await env.client("iago").delete(
            "/users/me/subscriptions", {"subscriptions": ["Denmark"], "principals": [othello.id]}
        )
    )
    assert body["removed"] == ["Denmark"]
    assert await _subscription_count(env) == 0


async def test_can_remove_subscribers_group_grants_removal(env: TestEnv) -> None:
    await env.client("iago").post(
        "/users/me/subscriptions",
        {
            "subscriptions": [{"name": "Open"}],
            "principals": [env.users["othello"].id],
            "can_remove_subscribers_group": await system_group_id(env, "role:members"),
        },
    )
    body = assert_success(
        await env.client("hamlet").delete(
            "/users/me/subscriptions",
            {"subscriptions": ["Open"], "principals": ["othello@example.com"]},
        )
    )
    assert body["removed"] == ["Open"]


async def test_subscription_status(env: TestEnv) -> None:
    target = await env.subscribe("othello", "Denmark")
    secret = await env.subscribe("othello", "Secret", invite_only=True)
    othello, hamlet = env.users["othello"], env.users["hamlet"]
    client = env.client("hamlet")
    body = assert_success(await client.get(f"/users/{othello.id}/subscriptions/{target.id}"))
    assert body["is_subscribed"] is True
    body = assert_success(await client.get(f"/users/{hamlet.id}/subscriptions/{target.id}"))
    assert body["is_subscribed"] is False
    assert_error(
        await client.get(f"/users/{othello.id}/subscriptions/{secret.id}"), "Invalid stream ID"
    )
    assert_error(await client.get(f"/users/{othello.id}/subscriptions/99999"), "Invalid stream ID")
    assert_error(await client.get(f"/users/99999/subscriptions/{target.id}"), "No such user")
    # Administrators see private streams' subscribers.
    body = assert_success(
        await env.client("iago").get(f"/users/{othello.id}/subscriptions/{secret.id}")
    )
    assert body["is_subscribed"] is True


async def test_new_users_join_default_streams(env: TestEnv) -> None:
    from hubbub.db.tables import default_stream

    target = await env.subscribe("hamlet", "Welcome")
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.insert(default_stream).values(realm_id=env.realm.id, stream_id=target.id)
        )
    newbie = await env.create_user("new@example.com", "New Person")
    subs = assert_success(await env.client(newbie).get("/users/me/subscriptions"))
    assert _names(subs) == ["Welcome"]
    bot = await env.create_user("b-bot@example.com", "B Bot", bot_owner=env.users["hamlet"])
    assert _names(assert_success(await env.client(bot).get("/users/me/subscriptions"))) == []
