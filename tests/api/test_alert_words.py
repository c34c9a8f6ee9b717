"""``GET``, ``POST`` and ``DELETE /users/me/alert_words``."""

from __future__ import annotations

import sqlalchemy as sa

from hubbub.db.tables import alert_word
from hubbub.queries.alert_words import alert_words_in_realm
from tests.helpers import TestEnv, assert_error, assert_success

WORDS = "/users/me/alert_words"


async def _rows(env: TestEnv) -> list[tuple[int, int, str]]:
    async with env.services.db.read() as conn:
        rows = await conn.execute(sa.select(alert_word).order_by(alert_word.c.id))
        return [(r.user_profile_id, r.realm_id, r.word) for r in rows]


async def _get(env: TestEnv, user: str = "hamlet") -> list[str]:
    return assert_success(await env.client(user).get(WORDS))["alert_words"]  # type: ignore[no-any-return]


async def test_add_list_remove(env: TestEnv) -> None:
    client = env.client("hamlet")
    assert await _get(env) == []
    body = assert_success(await client.post(WORDS, {"alert_words": ["natural", "illustrious"]}))
    assert body["alert_words"] == ["natural", "illustrious"]
    body = assert_success(await client.post(WORDS, {"alert_words": ["foo", "bar"]}))
    assert body["alert_words"] == ["natural", "illustrious", "foo", "bar"]
    assert await _get(env) == ["natural", "illustrious", "foo", "bar"]
    hamlet = env.users["hamlet"]
    assert [(u, r) for u, r, _ in await _rows(env)] == [(hamlet.id, env.realm.id)] * 4

    body = assert_success(await client.delete(WORDS, {"alert_words": ["foo", "not set"]}))
    assert body["alert_words"] == ["natural", "illustrious", "bar"]
    assert await _get(env) == ["natural", "illustrious", "bar"]
    # Each user has their own words.
    assert await _get(env, "othello") == []
    state = assert_success(
        await env.client("hamlet").post("/register", {"fetch_event_types": ["alert_words"]})
    )
    assert state["alert_words"] == ["natural", "illustrious", "bar"]


async def test_cleaning_and_case(env: TestEnv) -> None:
    client = env.client("hamlet")
    body = assert_success(
        await client.post(WORDS, {"alert_words": ["  Lunch ", "", "   ", "lunch", "LUNCH", "tea"]})
    )
    # Stripped, empty ones dropped; among new words differing in case the last spelling
    # wins, in the first one's place.
    assert body["alert_words"] == ["LUNCH", "tea"]
    # Words already set are skipped, whatever their case.
    body = assert_success(await client.post(WORDS, {"alert_words": ["Tea", "café"]}))
    assert body["alert_words"] == ["LUNCH", "tea", "café"]
    # Removal ignores case, non-ASCII included.
    body = assert_success(await client.delete(WORDS, {"alert_words": ["lunch", "CAFÉ"]}))
    assert body["alert_words"] == ["tea"]
    # An empty request changes nothing.
    assert assert_success(await client.post(WORDS, {"alert_words": []}))["alert_words"] == ["tea"]
    assert assert_success(await client.delete(WORDS, {"alert_words": []}))["alert_words"] == ["tea"]


async def test_errors_change_nothing(env: TestEnv) -> None:
    client = env.client("hamlet")
    assert_success(await client.post(WORDS, {"alert_words": ["keep"]}))
    before = await _rows(env)
    long_word = "x" * 101
    assert_error(
        await client.post(WORDS, {"alert_words": ["ok", long_word]}),
        "alert_words[1] is too long (limit: 100 characters)",
    )
    # The limit applies before stripping, as in Zulip.
    assert_error(
        await client.post(WORDS, {"alert_words": [" " + "x" * 100]}),
        "alert_words[0] is too long (limit: 100 characters)",
    )
    assert_error(await client.post(WORDS, {"alert_words": [1]}), "alert_words[0] is not a string")
    assert_error(await client.post(WORDS, {"alert_words": "keep"}), "alert_words is not valid JSON")
    assert_error(await client.post(WORDS, {"alert_words": {"a": 1}}), "alert_words is not a list")
    assert_error(
        await client.post(WORDS, {}),
        "Missing 'alert_words' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert_error(
        await client.delete(WORDS, {"alert_words": [None]}), "alert_words[0] is not a string"
    )
    assert_error(
        await client.delete(WORDS, {}),
        "Missing 'alert_words' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert await _rows(env) == before
    # Exactly 100 characters is allowed.
    assert_success(await client.post(WORDS, {"alert_words": ["y" * 100]}))


async def test_alert_words_in_realm(env: TestEnv) -> None:
    assert_success(await env.client("hamlet").post(WORDS, {"alert_words": ["a", "b"]}))
    assert_success(await env.client("othello").post(WORDS, {"alert_words": ["c"]}))
    async with env.services.db.read() as conn:
        words = await alert_words_in_realm(conn, env.realm.id)
    assert words == {env.users["hamlet"].id: ["a", "b"], env.users["othello"].id: ["c"]}
