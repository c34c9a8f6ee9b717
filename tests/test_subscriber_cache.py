"""Each stream's active subscribers kept by a process (``queries/subscriber_cache``) and
the count the triggers of migration 0020 keep: a send reads a stream's subscription rows
again only after a change of who is subscribed, whoever wrote it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest
import sqlalchemy as sa

from hubbub.db.tables import stream_subscribers_version, subscription
from hubbub.queries import subscriber_cache as cache_module
from hubbub.queries.streams import get_send_stream, get_subscriber_ids
from hubbub.queries.subscriber_cache import SubscriberCache
from tests.helpers import TestEnv, assert_success
from tests.messages_helpers import message_flags, send_stream_message


async def _version(env: TestEnv, stream_id: int) -> int:
    async with env.services.db.read() as conn:
        found = await conn.execute(
            sa.select(stream_subscribers_version.c.version).where(
                stream_subscribers_version.c.stream_id == stream_id
            )
        )
        return int(found.scalar() or 0)


def _subscription_of(user_id: int, stream_id: int) -> Any:
    return (subscription.c.user_profile_id == user_id) & (subscription.c.stream_id == stream_id)


async def test_triggers_count_every_change_of_who_is_subscribed(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    verona = await env.subscribe("hamlet", "Verona")
    verona_start = await _version(env, verona.id)
    owner = env.client("desdemona")
    users = env.users

    async def counted(change: Callable[[], Awaitable[Any]]) -> int:
        before = await _version(env, denmark.id)
        await change()
        return await _version(env, denmark.id) - before

    assert await _version(env, denmark.id) >= 1  # hamlet's row

    async def subscribe() -> None:
        params = {
            "subscriptions": orjson.dumps([{"name": "Denmark"}]).decode(),
            "principals": orjson.dumps([users["othello"].id, users["iago"].id]).decode(),
        }
        assert_success(await owner.post("/users/me/subscriptions", params))

    assert await counted(subscribe) == 2  # one a row

    async def set_property(name: str, value: Any) -> None:
        data = [{"stream_id": denmark.id, "property": name, "value": value}]
        params = {"subscription_data": orjson.dumps(data).decode()}
        assert_success(
            await env.client("othello").post("/users/me/subscriptions/properties", params)
        )

    # A subscriber's own settings change nobody's subscription.
    assert await counted(lambda: set_property("color", "#ffffff")) == 0
    assert await counted(lambda: set_property("is_muted", True)) == 0

    async def unsubscribe() -> None:
        params = {"subscriptions": orjson.dumps(["Denmark"]).decode()}
        assert_success(await env.client("othello").delete("/users/me/subscriptions", params))

    assert await counted(unsubscribe) == 1  # the row kept, inactive
    assert await counted(subscribe) == 1  # othello's row active again; iago's unchanged
    # Written by another connection, as a command or another worker would.
    iago_row = _subscription_of(users["iago"].id, denmark.id)
    deactivate = sa.update(subscription).where(iago_row).values(active=False)
    assert await counted(lambda: env.write_elsewhere(deactivate)) == 1
    # An UPDATE that names ``active`` without changing it counts nothing.
    assert await counted(lambda: env.write_elsewhere(deactivate)) == 0
    # A row moved to another stream changes both.
    before_verona = await _version(env, verona.id)
    move = sa.update(subscription).where(iago_row).values(stream_id=verona.id)
    assert await counted(lambda: env.write_elsewhere(move)) == 1
    assert await _version(env, verona.id) == before_verona + 1
    othello_row = _subscription_of(users["othello"].id, denmark.id)
    assert (
        await counted(lambda: env.write_elsewhere(sa.delete(subscription).where(othello_row))) == 1
    )
    assert await _version(env, verona.id) == verona_start + 1  # only the moved row


class Reads:
    """Counts the subscription reads that ``SubscriberCache`` saves."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        read = get_subscriber_ids

        async def counting(conn: Any, stream_ids: Any) -> Any:
            self.count += 1
            return await read(conn, stream_ids)

        monkeypatch.setattr(cache_module, "get_subscriber_ids", counting)


async def test_a_sends_subscribers_are_read_again_only_after_a_change(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    users = env.users
    for name in ("hamlet", "iago", "shiva"):
        denmark = await env.subscribe(name, "Denmark")
    reads = Reads(monkeypatch)

    async def recipients(content: str = "hello") -> set[str]:
        message_id = await send_stream_message(env, "hamlet", "Denmark", content)
        by_id = {user.id: name for name, user in users.items()}
        return {by_id[user_id] for user_id in await message_flags(env, message_id)}

    assert await recipients() == {"hamlet", "iago", "shiva"}
    assert await recipients() == {"hamlet", "iago", "shiva"}
    assert reads.count == 1  # kept
    # A subscriber's own setting: still kept.
    data = [{"stream_id": denmark.id, "property": "color", "value": "#000000"}]
    assert_success(
        await env.client("iago").post(
            "/users/me/subscriptions/properties",
            {"subscription_data": orjson.dumps(data).decode()},
        )
    )
    assert await recipients() == {"hamlet", "iago", "shiva"}
    assert reads.count == 1
    # Subscribed through the API: read again, and the new subscriber gets the message.
    params = {
        "subscriptions": orjson.dumps([{"name": "Denmark"}]).decode(),
        "principals": orjson.dumps([users["othello"].id]).decode(),
    }
    assert_success(await env.client("desdemona").post("/users/me/subscriptions", params))
    assert await recipients() == {"hamlet", "iago", "shiva", "othello"}
    assert reads.count == 2
    # Unsubscribed by another connection.
    othello_row = _subscription_of(users["othello"].id, denmark.id)
    await env.write_elsewhere(sa.update(subscription).where(othello_row).values(active=False))
    assert await recipients() == {"hamlet", "iago", "shiva"}
    assert reads.count == 3
    # A subscriber deactivated (the realm's people version): no longer a recipient.
    assert_success(await env.client("desdemona").delete(f"/users/{users['shiva'].id}"))
    assert await recipients() == {"hamlet", "iago"}
    assert reads.count == 4
    assert await recipients() == {"hamlet", "iago"}
    assert reads.count == 4


async def test_kept_streams_are_bounded_and_match_a_fresh_read(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    streams = [await env.subscribe("hamlet", name) for name in ("Denmark", "Verona", "Rome")]
    await env.subscribe("othello", "Verona")
    kept = SubscriberCache(max_streams=2)
    reads = Reads(monkeypatch)

    async def active_ids(stream_id: int) -> tuple[int, ...]:
        async with env.services.db.read() as conn:
            found = await get_send_stream(conn, env.realm.id, stream_id)
            assert found is not None
            ids = await kept.active_ids(conn, stream_id, found.subscribers_version)
            # What a read in the same transaction gives (the original, not counted).
            assert list(ids) == (await get_subscriber_ids(conn, [stream_id]))[stream_id]
            return ids

    denmark, verona, rome = (s.id for s in streams)
    assert await active_ids(denmark) == (env.users["hamlet"].id,)
    assert await active_ids(verona) == tuple(
        sorted([env.users["hamlet"].id, env.users["othello"].id])
    )
    assert await active_ids(denmark) == (env.users["hamlet"].id,)
    assert reads.count == 2
    # A third stream: the first kept (Denmark) goes, however recently it was used.
    await active_ids(rome)
    assert reads.count == 3
    await active_ids(verona)
    assert reads.count == 3
    await active_ids(denmark)
    assert reads.count == 4
