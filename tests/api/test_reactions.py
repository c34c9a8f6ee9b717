"""``POST`` and ``DELETE /messages/{message_id}/reactions`` and the ``reactions`` of
message objects."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from hubbub.db.tables import reaction, stream, user_message
from hubbub.queries.messages import HISTORICAL, READ
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import message_flags, send_direct_message, send_stream_message


async def _react(env: TestEnv, user: str, message_id: int, **params: Any) -> Any:
    return await env.client(user).post(f"/messages/{message_id}/reactions", params)


async def _unreact(env: TestEnv, user: str, message_id: int, **params: Any) -> Any:
    return await env.client(user).delete(f"/messages/{message_id}/reactions", params)


async def _reactions(env: TestEnv, user: str, message_id: int) -> list[dict[str, Any]]:
    body = assert_success(await env.client(user).get(f"/messages/{message_id}"))
    return body["message"]["reactions"]  # type: ignore[no-any-return]


async def _rows(env: TestEnv) -> list[tuple[int, str, str, str]]:
    async with env.services.db.read() as conn:
        rows = await conn.execute(
            sa.select(
                reaction.c.user_profile_id,
                reaction.c.emoji_name,
                reaction.c.emoji_code,
                reaction.c.reaction_type,
            ).order_by(reaction.c.id)
        )
        return [tuple(r) for r in rows]


async def _denmark_message(env: TestEnv) -> int:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    return await send_stream_message(env, "hamlet", "Denmark")


async def test_add_by_name_and_show_on_messages(env: TestEnv) -> None:
    message_id = await _denmark_message(env)
    assert_success(await _react(env, "othello", message_id, emoji_name="octopus"))
    assert_success(await _react(env, "hamlet", message_id, emoji_name="zulip"))
    assert_success(
        await _react(
            env,
            "hamlet",
            message_id,
            emoji_name="smile",
            emoji_code="1f642",
            reaction_type="unicode_emoji",
        )
    )
    othello, hamlet = env.users["othello"], env.users["hamlet"]
    expected = [
        {
            "emoji_name": "octopus",
            "emoji_code": "1f419",
            "reaction_type": "unicode_emoji",
            "user_id": othello.id,
            "user": {"id": othello.id, "email": othello.email, "full_name": "Othello"},
        },
        {
            "emoji_name": "zulip",
            "emoji_code": "zulip",
            "reaction_type": "zulip_extra_emoji",
            "user_id": hamlet.id,
            "user": {"id": hamlet.id, "email": hamlet.email, "full_name": "Hamlet"},
        },
        {
            "emoji_name": "smile",
            "emoji_code": "1f642",
            "reaction_type": "unicode_emoji",
            "user_id": hamlet.id,
            "user": {"id": hamlet.id, "email": hamlet.email, "full_name": "Hamlet"},
        },
    ]
    # In the order they were added, on GET /messages/{id} and on GET /messages.
    assert await _reactions(env, "othello", message_id) == expected
    other_id = await send_stream_message(env, "othello", "Denmark")
    body = assert_success(
        await env.client("othello").get(
            "/messages", {"anchor": "oldest", "num_before": 0, "num_after": 10}
        )
    )
    by_id = {m["id"]: m for m in body["messages"]}
    assert by_id[message_id]["reactions"] == expected
    assert by_id[other_id]["reactions"] == []


async def test_two_names_of_one_emoji_are_one_reaction(env: TestEnv) -> None:
    message_id = await _denmark_message(env)
    assert_success(await _react(env, "hamlet", message_id, emoji_name="thumbs_up"))
    body = assert_error(
        await _react(env, "hamlet", message_id, emoji_name="+1"),
        "Reaction already exists.",
        code="REACTION_ALREADY_EXISTS",
    )
    assert set(body) == {"result", "msg", "code"}
    # Another user's "like" is a vote for the existing reaction, under its name.
    assert_success(await _react(env, "othello", message_id, emoji_name="like"))
    hamlet, othello = env.users["hamlet"].id, env.users["othello"].id
    assert await _rows(env) == [
        (hamlet, "thumbs_up", "1f44d", "unicode_emoji"),
        (othello, "thumbs_up", "1f44d", "unicode_emoji"),
    ]
    # Removing by yet another name finds it by code.
    assert_success(await _unreact(env, "othello", message_id, emoji_name="+1"))
    assert await _rows(env) == [(hamlet, "thumbs_up", "1f44d", "unicode_emoji")]


async def test_vote_skips_name_validation(env: TestEnv) -> None:
    message_id = await _denmark_message(env)
    assert_success(await _react(env, "hamlet", message_id, emoji_name="smile"))
    # The name does not match the code, but the emoji is already on the message.
    assert_success(
        await _react(
            env,
            "othello",
            message_id,
            emoji_name="car",
            emoji_code="1f642",
            reaction_type="unicode_emoji",
        )
    )
    assert [r[1] for r in await _rows(env)] == ["smile", "smile"]


async def test_emoji_errors(env: TestEnv) -> None:
    message_id = await _denmark_message(env)
    cases: list[tuple[dict[str, str], str]] = [
        ({"emoji_name": "foo"}, "Emoji 'foo' does not exist"),
        ({"emoji_name": ""}, "Emoji '' does not exist"),
        ({"emoji_name": "foo", "reaction_type": "unicode_emoji"}, "Emoji 'foo' does not exist"),
        (
            {"emoji_name": "smile", "emoji_code": "TBD", "reaction_type": "unicode_emoji"},
            "Invalid emoji code.",
        ),
        (
            {"emoji_name": "car", "emoji_code": "1f642", "reaction_type": "unicode_emoji"},
            "Invalid emoji name.",
        ),
        # A code alone takes its type from the name.
        ({"emoji_name": "car", "emoji_code": "1f642"}, "Invalid emoji name."),
        ({"emoji_name": "smile", "reaction_type": "realm_emoji"}, "Invalid custom emoji."),
        (
            {"emoji_name": "green_tick", "emoji_code": "1", "reaction_type": "realm_emoji"},
            "Invalid custom emoji.",
        ),
        (
            {"emoji_name": "zulip", "emoji_code": "zulip", "reaction_type": "nonexistent"},
            "Invalid emoji type.",
        ),
        (
            {"emoji_name": "zulip", "emoji_code": "smile", "reaction_type": "zulip_extra_emoji"},
            "Invalid emoji code.",
        ),
        (
            {"emoji_name": "smile", "emoji_code": "zulip", "reaction_type": "zulip_extra_emoji"},
            "Invalid emoji name.",
        ),
    ]
    for params, msg in cases:
        assert_error(await _react(env, "othello", message_id, **params), msg)
    assert_error(
        await _react(env, "othello", message_id),
        "Missing 'emoji_name' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert await _rows(env) == []


async def test_inaccessible_messages(env: TestEnv) -> None:
    direct_id = await send_direct_message(env, "hamlet", ["othello"])
    public_id = await _denmark_message(env)
    await env.subscribe("hamlet", "Secret", invite_only=True)
    secret_id = await send_stream_message(env, "hamlet", "Secret")
    for user, message_id in [
        ("iago", direct_id),
        ("othello", secret_id),
        # Guests read only the streams they are subscribed to.
        ("polonius", public_id),
        ("hamlet", 999999),
    ]:
        assert_error(await _react(env, user, message_id, emoji_name="smile"), "Invalid message(s)")
        assert_error(
            await _unreact(env, user, message_id, emoji_name="smile"), "Invalid message(s)"
        )
    # The message check comes before the emoji check.
    assert_error(await _react(env, "iago", direct_id, emoji_name="foo"), "Invalid message(s)")
    assert_success(await _react(env, "othello", direct_id, emoji_name="smile"))
    assert await _rows(env) == [(env.users["othello"].id, "smile", "1f642", "unicode_emoji")]


async def test_other_realm_message_is_invalid(env: TestEnv) -> None:
    message_id = await _denmark_message(env)
    other = await env.create_realm("other", "Other")
    stranger = await env.create_user("stranger@example.com", "Stranger", realm=other)
    client = env.client(stranger, host="other.localhost")
    response = await client.post(f"/messages/{message_id}/reactions", {"emoji_name": "smile"})
    assert_error(response, "Invalid message(s)")


async def test_reacting_to_history_creates_historical_row(env: TestEnv) -> None:
    message_id = await _denmark_message(env)
    iago = env.users["iago"].id
    assert iago not in await message_flags(env, message_id)
    assert_success(await _react(env, "iago", message_id, emoji_name="smile"))
    assert (await message_flags(env, message_id))[iago] == READ | HISTORICAL
    # A second reaction finds the row and adds no other.
    assert_success(await _react(env, "iago", message_id, emoji_name="tada"))
    async with env.services.db.read() as conn:
        count = (
            await conn.execute(
                sa.select(sa.func.count())
                .select_from(user_message)
                .where(user_message.c.user_profile_id == iago)
            )
        ).scalar()
    assert count == 1
    # The message now reads as historical from the row, not as "no row".
    msg = assert_success(await env.client("iago").get(f"/messages/{message_id}"))["message"]
    assert msg["flags"] == ["read", "historical"]
    assert [r["emoji_name"] for r in msg["reactions"]] == ["smile", "tada"]


async def test_private_stream_with_shared_history(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Secret", invite_only=True)
    message_id = await send_stream_message(env, "hamlet", "Secret")
    secret = await env.subscribe("othello", "Secret")
    assert_error(await _react(env, "othello", message_id, emoji_name="smile"), "Invalid message(s)")
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(stream)
            .where(stream.c.id == secret.id)
            .values(history_public_to_subscribers=True)
        )
    assert_success(await _react(env, "othello", message_id, emoji_name="smile"))
    assert (await message_flags(env, message_id))[env.users["othello"].id] == READ | HISTORICAL


async def test_remove_reaction(env: TestEnv) -> None:
    message_id = await _denmark_message(env)
    hamlet = env.users["hamlet"].id
    assert_success(await _react(env, "hamlet", message_id, emoji_name="smile"))
    assert_success(await _react(env, "hamlet", message_id, emoji_name="zulip"))
    assert_success(await _react(env, "othello", message_id, emoji_name="smile"))
    assert_error(
        await _unreact(env, "hamlet", message_id),
        "At least one of the following arguments must be present: emoji_name, emoji_code",
    )
    assert_error(
        await _unreact(env, "hamlet", message_id, emoji_name="foo"), "Emoji 'foo' does not exist"
    )
    body = assert_error(
        await _unreact(env, "hamlet", message_id, emoji_name="tada"),
        "Reaction doesn't exist.",
        code="REACTION_DOES_NOT_EXIST",
    )
    assert set(body) == {"result", "msg", "code"}
    # The type defaults to unicode_emoji even when the name is "zulip".
    assert_error(
        await _unreact(env, "hamlet", message_id, emoji_name="zulip"),
        "Reaction doesn't exist.",
        code="REACTION_DOES_NOT_EXIST",
    )
    assert_success(
        await _unreact(
            env, "hamlet", message_id, emoji_code="zulip", reaction_type="zulip_extra_emoji"
        )
    )
    # By code only; othello's reaction with the same emoji stays.
    assert_success(await _unreact(env, "hamlet", message_id, emoji_code="1f642"))
    assert await _rows(env) == [(env.users["othello"].id, "smile", "1f642", "unicode_emoji")]
    assert hamlet not in [r["user_id"] for r in await _reactions(env, "hamlet", message_id)]
    assert_error(
        await _unreact(env, "hamlet", message_id, emoji_name="smile"),
        "Reaction doesn't exist.",
        code="REACTION_DOES_NOT_EXIST",
    )


async def test_ignored_parameters_are_reported(env: TestEnv) -> None:
    message_id = await _denmark_message(env)
    body = assert_success(await _react(env, "hamlet", message_id, emoji_name="smile", emoji="x"))
    assert body["ignored_parameters_unsupported"] == ["emoji"]


async def test_has_reaction_narrow(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    reacted = await send_stream_message(env, "hamlet", "Denmark", "react to me")
    await send_stream_message(env, "hamlet", "Denmark", "leave me alone")
    assert_success(await _react(env, "hamlet", reacted, emoji_name="smile"))
    params = {"anchor": "newest", "num_before": 10, "num_after": 0}
    found = assert_success(
        await env.client("hamlet").get(
            "/messages", {**params, "narrow": [{"operator": "has", "operand": "reaction"}]}
        )
    )
    assert [m["id"] for m in found["messages"]] == [reacted]
    assert_success(await _unreact(env, "hamlet", reacted, emoji_name="smile"))
    found = assert_success(
        await env.client("hamlet").get(
            "/messages", {**params, "narrow": [{"operator": "has", "operand": "reaction"}]}
        )
    )
    assert found["messages"] == []
