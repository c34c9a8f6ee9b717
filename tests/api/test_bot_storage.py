"""``/bot_storage``: a user's own key-value store, with Zulip 10.2's rules and error texts
(the size limit over the whole store, missing keys, string values only)."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.actions.bot_storage import USER_STATE_SIZE_LIMIT
from hubbub.db.tables import bot_storage
from hubbub.models import User
from tests.helpers import ApiClient, TestEnv, assert_error, assert_success


@pytest.fixture
async def bot(env: TestEnv) -> User:
    return await env.create_user(
        "storage-bot@example.com", "Storage", bot_owner=env.users["hamlet"]
    )


async def _put(client: ApiClient, storage: Any) -> Any:
    return await client.request("PUT", "/bot_storage", {"storage": storage})


async def _get(client: ApiClient, keys: Any = None) -> Any:
    return await client.get("/bot_storage", None if keys is None else {"keys": keys})


async def _rows(env: TestEnv) -> list[tuple[int, str, str]]:
    async with env.services.db.read() as conn:
        rows = await conn.execute(
            sa.select(bot_storage).order_by(bot_storage.c.bot_profile_id, bot_storage.c.key)
        )
        return [(r.bot_profile_id, r.key, r.value) for r in rows]


async def test_put_get_delete(env: TestEnv, bot: User) -> None:
    client = env.client(bot)
    assert assert_success(await _get(client))["storage"] == {}
    assert_success(await _put(client, {"entry 1": "value 1", "entry 2": "value 2", "e3": ""}))
    assert assert_success(await _get(client))["storage"] == {
        "entry 1": "value 1",
        "entry 2": "value 2",
        "e3": "",
    }
    body = assert_success(await _get(client, ["e3", "entry 1", "e3"]))
    assert body["storage"] == {"e3": "", "entry 1": "value 1"}
    # An empty list names no key (Zulip 10.2 reads all only when ``keys`` is absent).
    assert assert_success(await _get(client, []))["storage"] == {}
    # A write replaces values and keeps the other entries.
    assert_success(await _put(client, {"entry 1": "new", "": "empty key"}))
    assert assert_success(await _get(client))["storage"] == {
        "": "empty key",
        "e3": "",
        "entry 1": "new",
        "entry 2": "value 2",
    }
    assert_success(await _put(client, {}))
    assert_success(await client.delete("/bot_storage", {"keys": ["entry 2", ""]}))
    assert assert_success(await _get(client))["storage"] == {"e3": "", "entry 1": "new"}
    assert_success(await client.delete("/bot_storage", {"keys": []}))
    assert len(await _rows(env)) == 2
    assert_success(await client.delete("/bot_storage"))
    assert await _rows(env) == []
    # Removing everything from an empty store is no error.
    assert_success(await client.delete("/bot_storage"))


async def test_each_user_has_their_own(env: TestEnv, bot: User) -> None:
    # Zulip does not restrict the endpoint to bots: every user has a store of their own.
    assert_success(await _put(env.client(bot), {"k": "bot's"}))
    assert_success(await _put(env.client("hamlet"), {"k": "hamlet's"}))
    assert assert_success(await _get(env.client("hamlet")))["storage"] == {"k": "hamlet's"}
    assert assert_success(await _get(env.client(bot), ["k"]))["storage"] == {"k": "bot's"}
    assert_error(await _get(env.client("othello"), ["k"]), "Key does not exist.")
    assert_success(await env.client("hamlet").delete("/bot_storage"))
    assert await _rows(env) == [(bot.id, "k", "bot's")]


async def test_missing_keys(env: TestEnv, bot: User) -> None:
    client = env.client(bot)
    assert_success(await _put(client, {"a": "1", "b": "2"}))
    before = await _rows(env)
    assert_error(await _get(client, ["a", "c"]), "Key does not exist.")
    assert_error(await client.delete("/bot_storage", {"keys": ["a", "c"]}), "Key does not exist.")
    # As in Zulip, a key named twice counts as a missing one.
    assert_error(await client.delete("/bot_storage", {"keys": ["a", "a"]}), "Key does not exist.")
    assert await _rows(env) == before


async def test_storage_limit(env: TestEnv, bot: User) -> None:
    client = env.client(bot)
    # Fill the store to ten characters below the limit without sending 10 MB.
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.insert(bot_storage).values(
                bot_profile_id=bot.id, key="big", value="x" * (USER_STATE_SIZE_LIMIT - 13)
            )
        )
    assert_success(await _put(client, {"ab": "cdefghij"}))  # exactly at the limit
    before = await _rows(env)
    assert_error(
        await _put(client, {"ab": "cdefghijk", "z": ""}),
        f"Request exceeds storage limit by 2 characters. The limit is {USER_STATE_SIZE_LIMIT} "
        "characters.",
    )
    assert await _rows(env) == before
    # Replacing an entry counts only the difference; shrinking one makes room for others.
    assert_success(await _put(client, {"ab": "c", "z": "1234"}))
    assert assert_success(await _get(client, ["ab", "z"]))["storage"] == {"ab": "c", "z": "1234"}
    # Another user's store is counted on its own.
    assert_success(await _put(env.client("hamlet"), {"ab": "x" * 1000}))


async def test_malformed_arguments(env: TestEnv, bot: User) -> None:
    client = env.client(bot)
    assert_error(
        await client.request("PUT", "/bot_storage", {}),
        "Missing 'storage' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    for storage, msg in [
        ("{", "storage is not valid JSON"),
        (["a"], "storage is not a dict"),
        ({"a": 1}, 'storage["a"] is not a string'),
        ({"ok": "x", "b\u00e9": None}, 'storage["b\\u00e9"] is not a string'),
        ({"k" * 1001: "v"}, "Key is too long (limit: 1000 characters)."),
        ({"k": "a\x00b"}, "Storage must not contain null bytes."),
    ]:
        assert_error(await _put(client, storage), msg)
    assert_error(await _get(client, "x"), "keys is not valid JSON")
    assert_error(await _get(client, {"a": "b"}), "keys is not a list")
    assert_error(await _get(client, ["a", 1]), "keys[1] is not a string")
    assert_error(await client.delete("/bot_storage", {"keys": [None]}), "keys[0] is not a string")
    assert await _rows(env) == []
    assert_success(await _put(client, {"k" * 1000: "v"}))


async def test_many_keys(env: TestEnv, bot: User) -> None:
    client = env.client(bot)
    entries = {f"key {n}": str(n) for n in range(1500)}
    assert_success(await _put(client, entries))
    assert assert_success(await _get(client))["storage"] == entries
    keys = list(entries)[::-1]
    assert assert_success(await _get(client, keys))["storage"] == entries
    assert_success(await client.delete("/bot_storage", {"keys": keys[:1200]}))
    assert len(await _rows(env)) == 300


async def test_needs_authentication(env: TestEnv) -> None:
    assert_error(
        await env.client().get("/bot_storage"),
        "Not logged in: API authentication or user session required",
        status=401,
        code="UNAUTHORIZED",
    )
