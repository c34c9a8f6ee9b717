"""``GET /messages``: anchors, windows, narrows, flags and search highlighting."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from hubbub.db.tables import subscription, user_message, user_topic
from hubbub.queries.message_fetch import LARGER_THAN_MAX_MESSAGE_ID
from tests.helpers import TestEnv, add_user_message_flags, assert_error, assert_success
from tests.messages_helpers import send_direct_message, send_stream_message


async def _get(env: TestEnv, user: str = "hamlet", **params: Any) -> dict[str, Any]:
    params.setdefault("num_before", 0)
    params.setdefault("num_after", 0)
    return assert_success(await env.client(user).get("/messages", params))


def _ids(body: dict[str, Any]) -> list[int]:
    return [m["id"] for m in body["messages"]]


async def _five(env: TestEnv) -> list[int]:
    await env.subscribe("hamlet", "Verona")
    await env.subscribe("othello", "Verona")
    return [
        await send_stream_message(env, "othello", "Verona", f"message {i}", topic="t")
        for i in range(5)
    ]


async def test_windows_around_anchors(env: TestEnv) -> None:
    ids = await _five(env)
    body = await _get(env, anchor="newest", num_before=3)
    assert _ids(body) == ids[2:]
    assert body["anchor"] == LARGER_THAN_MAX_MESSAGE_ID
    assert (body["found_anchor"], body["found_oldest"], body["found_newest"]) == (
        False,
        False,
        True,
    )
    assert body["history_limited"] is False
    body = await _get(env, anchor="oldest", num_after=2)
    assert _ids(body) == ids[:2]
    assert (body["anchor"], body["found_oldest"], body["found_newest"]) == (0, True, False)
    body = await _get(env, anchor=ids[2], num_before=1, num_after=1)
    assert _ids(body) == ids[1:4]
    assert (body["found_anchor"], body["found_oldest"], body["found_newest"]) == (
        True,
        False,
        False,
    )
    # The anchor may be left out at an end of the range.
    body = await _get(env, anchor=str(ids[2]), num_before=5, include_anchor=False)
    assert _ids(body) == ids[:2]
    assert (body["found_anchor"], body["found_oldest"], body["found_newest"]) == (
        False,
        True,
        False,
    )
    body = await _get(env, anchor=str(ids[2]), num_after=5, include_anchor=False)
    assert _ids(body) == ids[3:]
    assert (body["found_anchor"], body["found_oldest"], body["found_newest"]) == (
        False,
        False,
        True,
    )
    body = await _get(env, anchor=ids[4])
    assert _ids(body) == [ids[4]]
    body = await _get(env, anchor=-5, num_after=1)
    assert (_ids(body), body["anchor"]) == ([ids[0]], 0)
    # Past every message id (ids are 32-bit on PostgreSQL).
    body = await _get(env, anchor=3_000_000_000, num_before=1, num_after=1)
    assert (_ids(body), body["found_anchor"], body["found_newest"]) == ([ids[4]], False, True)
    # An id past every possible message id is refused (Zulip 10.2), not just unmatched.
    assert_error(
        await env.client("hamlet").get(
            "/messages", {"anchor": "newest", "num_before": 1, "narrow": [["id", "3000000000"]]}
        ),
        "Invalid narrow operator: Invalid message ID",
        code="BAD_NARROW",
    )


async def test_first_unread_skips_muted_topics(env: TestEnv) -> None:
    ids = await _five(env)
    hamlet = env.users["hamlet"]
    async with env.services.db.write() as conn:
        await add_user_message_flags(conn, 1, user_id=hamlet.id, message_ids=ids[:2])
    body = await _get(env, anchor="first_unread", num_after=1)
    assert (body["anchor"], _ids(body)) == (ids[2], ids[2:4])
    body = await _get(env, use_first_unread_anchor=True)
    assert (body["anchor"], _ids(body)) == (ids[2], [ids[2]])
    verona_id = (await env.client("hamlet").get("/get_stream_id", {"stream": "Verona"})).json()[
        "stream_id"
    ]
    # A muted stream hides its unread messages, except in a narrow to that stream.
    async with env.services.db.write() as conn:
        await conn.execute(
            subscription.update()
            .where(subscription.c.user_profile_id == hamlet.id)
            .values(is_muted=True)
        )
    body = await _get(env, anchor="first_unread")
    assert body["anchor"] == LARGER_THAN_MAX_MESSAGE_ID
    body = await _get(env, anchor="first_unread", narrow=[["stream", "Verona"]])
    assert body["anchor"] == ids[2]
    async with env.services.db.write() as conn:
        await conn.execute(
            subscription.update()
            .where(subscription.c.user_profile_id == hamlet.id)
            .values(is_muted=False)
        )
        await conn.execute(
            user_topic.insert().values(
                user_profile_id=hamlet.id,
                stream_id=verona_id,
                topic_name="T",
                last_updated=0,
                visibility_policy=1,
            )
        )
    body = await _get(env, anchor="first_unread", num_before=1)
    assert body["anchor"] == LARGER_THAN_MAX_MESSAGE_ID
    assert _ids(body) == [ids[4]]
    assert body["found_newest"] is True


async def test_flags_history_and_content_options(env: TestEnv) -> None:
    await _five(env)
    dm = await send_direct_message(env, "othello", ["hamlet"], "**secret**")
    body = await _get(env, "hamlet", anchor=dm, narrow=[{"operator": "is", "operand": "dm"}])
    (item,) = body["messages"]
    assert item["flags"] == []
    assert item["content"] == "<p><strong>secret</strong></p>"
    body = await _get(env, "hamlet", anchor=dm, apply_markdown=False, client_gravatar=False)
    (item,) = body["messages"]
    assert (item["content"], item["content_type"]) == ("**secret**", "text/x-markdown")
    assert item["avatar_url"] is not None
    # iago never received the stream messages: they are history for him.
    body = await _get(env, "iago", anchor="newest", num_before=2, narrow=[["stream", "Verona"]])
    assert [m["flags"] for m in body["messages"]] == [["read", "historical"]] * 2
    body = await _get(env, "iago", anchor="newest", num_before=2)
    assert body["messages"] == []
    # A guest does not read public streams' history.
    body = await _get(env, "polonius", anchor="newest", num_before=2, narrow=[["stream", "Verona"]])
    assert body["messages"] == []


async def test_search_highlights(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Verona")
    first = await send_stream_message(env, "hamlet", "Verona", "Lunch time", topic="lunch plans")
    await send_stream_message(env, "hamlet", "Verona", "Nothing here", topic="other")
    body = await _get(
        env,
        anchor="newest",
        num_before=10,
        narrow=[{"operator": "search", "operand": "lunch"}],
    )
    (item,) = body["messages"]
    assert item["id"] == first
    assert item["match_content"] == '<p><span class="highlight">Lunch</span> time</p>'
    assert item["match_subject"] == '<span class="highlight">lunch</span> plans'
    body = await _get(env, anchor="newest", num_before=10, narrow=[["stream", "Verona"]])
    assert all("match_content" not in m for m in body["messages"])


async def test_errors(env: TestEnv) -> None:
    await _five(env)
    client = env.client("hamlet")
    assert_error(
        await client.get("/messages", {"num_before": 0, "num_after": 0}),
        "Missing 'anchor' argument.",
    )
    assert_error(
        await client.get("/messages", {"anchor": "bogus", "num_before": 0, "num_after": 0}),
        "Invalid anchor",
    )
    assert_error(
        await client.get("/messages", {"anchor": "newest", "num_before": 4000, "num_after": 1001}),
        "Too many messages requested (maximum 5000).",
    )
    assert_error(
        await client.get("/messages", {"anchor": "newest", "num_before": -1, "num_after": 0}),
        "Bad value for 'num_before': -1",
    )
    assert_error(
        await client.get(
            "/messages",
            {"anchor": "newest", "num_before": 1, "num_after": 1, "include_anchor": "false"},
        ),
        "The anchor can only be excluded at an end of the range",
    )
    # Both counts default to 0 since feature level 300: the anchor alone.
    body = assert_success(await client.get("/messages", {"anchor": "first_unread"}))
    assert [m["content"] for m in body["messages"]] == ["<p>message 0</p>"]
    assert body["found_anchor"] is True
    assert_error(
        await client.get(
            "/messages",
            {
                "anchor": "newest",
                "num_before": 1,
                "num_after": 0,
                "narrow": [["stream", "nowhere"]],
            },
        ),
        "Invalid narrow operator: unknown channel nowhere",
        code="BAD_NARROW",
    )
    assert_error(
        await client.get(
            "/messages",
            {"anchor": "newest", "num_before": 1, "num_after": 0, "narrow": [["foo", "bar"]]},
        ),
        "Invalid narrow operator: unknown operator foo",
        code="BAD_NARROW",
    )
    async with env.services.db.read() as conn:
        count = (await conn.execute(sa.select(sa.func.count()).select_from(user_message))).scalar()
    assert count == 10  # reads change nothing


async def test_message_ids(env: TestEnv) -> None:
    ids = await _five(env)
    await env.subscribe("othello", "Secret", invite_only=True)
    secret = await send_stream_message(env, "othello", "Secret", "hidden")
    dm = await send_direct_message(env, "othello", ["hamlet"], "hi")
    client = env.client("hamlet")
    body = assert_success(
        await client.get("/messages", {"message_ids": [dm, ids[3], secret, ids[0], 10**6]})
    )
    # Only what hamlet may read, in id order; no window keys.
    assert _ids(body) == [ids[0], ids[3], dm]
    assert "anchor" not in body and body["history_limited"] is False
    narrowed = assert_success(
        await client.get("/messages", {"message_ids": [dm, ids[0]], "narrow": [["is", "dm"]]})
    )
    assert _ids(narrowed) == [dm]
    # The history of a public stream the user is not subscribed to reads as historical.
    await env.subscribe("othello", "Public")
    public = await send_stream_message(env, "othello", "Public", "open")
    [fetched] = assert_success(await client.get("/messages", {"message_ids": [public]}))["messages"]
    assert fetched["flags"] == ["read", "historical"]
    # Zulip's error names every window parameter, whichever was given; a zero count is
    # no window.
    every = "num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor"
    for clash in ({"anchor": "newest"}, {"num_after": 1}, {"use_first_unread_anchor": True}):
        response = await client.get("/messages", {"message_ids": [dm], **clash})
        assert_error(response, f"Unsupported parameter combination: {every}")
        assert response.json()["parameters"] == every
    body = assert_success(
        await client.get("/messages", {"message_ids": [dm], "num_before": 0, "num_after": 0})
    )
    assert _ids(body) == [dm]
    assert (body["found_anchor"], body["found_oldest"], body["found_newest"]) == (
        False,
        False,
        False,
    )
    assert_error(
        await client.get("/messages", {"message_ids": list(range(1, 5002))}),
        "Too many messages requested (maximum 5000).",
    )
