"""hubbub's own Redis client (``redis_client.py``): URLs, encoding, and against the test
Redis (``HUBBUB_TEST_REDIS_URL``) commands, pipelines, scripts after a flush, many requests
at once on the one connection (one of them cancelled), a connection Redis has closed, and a
subscription that loses its connection."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from hubbub.redis_client import (
    Address,
    Redis,
    RedisConnectionError,
    RedisReplyError,
    encode,
)
from hubbub.settings import Settings
from tests.helpers import drop_redis_namespace, redis_url_or_skip, running_env, with_test_redis


def test_urls() -> None:
    assert Address.from_url("redis://127.0.0.1:6379/0") == Address()
    assert Address.from_url("redis://:p%40ss@cache:6380/3") == Address(
        host="cache", port=6380, db=3, password="p@ss"
    )
    assert Address.from_url("rediss://user:pw@cache") == Address(
        host="cache", username="user", password="pw", tls=True
    )
    assert Address.from_url("redis://cache?db=2").db == 2
    assert Address.from_url("unix:///run/redis.sock?db=4") == Address(path="/run/redis.sock", db=4)
    for bad in ("http://cache", "cache:6379", "redis://cache/x"):
        with pytest.raises(ValueError):
            Address.from_url(bad)


def test_encoding() -> None:
    assert (
        encode(["SET", b"k", 12, 1.5]) == b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n12\r\n$3\r\n1.5\r\n"
    )
    assert encode(["ZADD", "z", float("-inf"), "é"]).endswith(b"$4\r\n-inf\r\n$2\r\n\xc3\xa9\r\n")
    with pytest.raises(TypeError):
        encode(["SET", "k", True])
    with pytest.raises(TypeError):
        encode(["SET", "k", None])  # type: ignore[list-item]


@pytest.fixture
async def redis() -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url_or_skip())
    try:
        yield client
    finally:
        await client.aclose()


def key() -> str:
    return f"test-client-{uuid.uuid4().hex}"


async def test_commands_and_error_replies(redis: Redis) -> None:
    name = key()
    try:
        assert await redis.execute_command("SET", name, "v") == b"OK"
        assert await redis.execute_command("GET", name) == b"v"
        assert await redis.execute_command("GET", key()) is None
        assert await redis.execute_command("EXISTS", name) == 1
        with pytest.raises(RedisReplyError, match="WRONGTYPE"):
            await redis.execute_command("LPUSH", name, "x")
        # The error did not cost the connection its place: the next call reuses it.
        assert await redis.execute_command("STRLEN", name) == 1
    finally:
        await redis.execute_command("DEL", name)


async def test_pipelines(redis: Redis) -> None:
    name = key()
    try:
        async with redis.pipeline(transaction=True) as pipe:
            pipe.command("RPUSH", name, "a", "b")
            pipe.command("LRANGE", name, 0, -1)
            assert await pipe.execute() == [2, [b"a", b"b"]]
        async with redis.pipeline(transaction=False) as pipe:
            pipe.command("LLEN", name)
            pipe.command("INCR", name)  # wrong type: raised after every reply is read
            with pytest.raises(RedisReplyError, match="WRONGTYPE"):
                await pipe.execute()
        # A command refused while queued (unknown command) discards the whole transaction.
        async with redis.pipeline(transaction=True) as pipe:
            pipe.command("RPUSH", name, "c")
            pipe.command("NO-SUCH-COMMAND")
            with pytest.raises(RedisReplyError):
                await pipe.execute()
        assert await redis.execute_command("LLEN", name) == 2
        assert await redis.pipeline().execute() == []
    finally:
        await redis.execute_command("DEL", name)


async def test_scripts_survive_a_flush(redis: Redis) -> None:
    name = key()
    script = redis.register_script("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    try:
        assert await script(keys=[name], args=[2]) == 2
        await redis.execute_command("SCRIPT", "FLUSH")  # as after a Redis restart
        assert await script(keys=[name], args=[3]) == 5
        assert await redis.execute_command("SCRIPT", "EXISTS", script.sha) == [1]
        await redis.execute_command("SCRIPT", "FLUSH")
        async with redis.pipeline(transaction=False) as pipe:
            script.queue(pipe, [name], [4])
            pipe.command("GET", name)
            assert await pipe.execute() == [9, b"9"]
    finally:
        await redis.execute_command("DEL", name)


async def test_a_connection_redis_closed_is_replaced(redis: Redis) -> None:
    first = await redis.execute_command("CLIENT", "ID")
    other = Redis(redis.address)
    try:
        assert await other.execute_command("CLIENT", "KILL", "ID", first) == 1
    finally:
        await other.aclose()
    # Whether or not the client has seen the connection close yet, the next call is
    # answered, on a new connection.
    replacement = await redis.execute_command("CLIENT", "ID")
    assert replacement != first
    assert await redis.execute_command("CLIENT", "ID") == replacement


async def test_requests_at_once_share_one_connection(redis: Redis) -> None:
    names = [key() for _ in range(200)]
    try:
        # 200 requests in flight together, one of them cancelled after it was sent: every
        # other gets its own reply, in order, on one connection.
        calls = [
            asyncio.ensure_future(redis.execute_command("SET", name, index))
            for index, name in enumerate(names)
        ]
        ids = asyncio.ensure_future(redis.execute_command("CLIENT", "ID"))
        reads = [asyncio.ensure_future(redis.execute_command("GET", name)) for name in names]
        await asyncio.sleep(0)
        reads[7].cancel()
        assert await asyncio.gather(*calls) == [b"OK"] * 200
        values = await asyncio.gather(*reads, return_exceptions=True)
        assert isinstance(values[7], asyncio.CancelledError)
        assert [v for i, v in enumerate(values) if i != 7] == [
            str(i).encode() for i in range(200) if i != 7
        ]
        assert await redis.execute_command("CLIENT", "ID") == await ids
        clients = await redis.execute_command("CLIENT", "LIST", "ID", await ids)
        assert clients.count(b"\n") == 1, clients
    finally:
        await redis.execute_command("DEL", *names)


async def test_requests_waiting_on_a_failed_connection_go_again(redis: Redis) -> None:
    own = await redis.execute_command("CLIENT", "ID")
    name = key()
    try:
        # BLPOP holds the connection in Redis (never sent by hubbub, whose requests all
        # share it); the SET waits behind it. The connection is killed meanwhile: neither
        # had an answer, so both go again, once, on a new connection.
        held = asyncio.ensure_future(redis.execute_command("BLPOP", name, 0.3))
        behind = asyncio.ensure_future(redis.execute_command("SET", name, "x"))
        await asyncio.sleep(0.1)
        other = Redis(redis.address)
        try:
            assert await other.execute_command("CLIENT", "KILL", "ID", own) == 1
        finally:
            await other.aclose()
        assert list(await asyncio.gather(held, behind)) == [None, b"OK"]
        assert await redis.execute_command("CLIENT", "ID") != own
    finally:
        await redis.execute_command("DEL", name)


async def test_an_unreachable_redis() -> None:
    client = Redis(Address(port=1))
    with pytest.raises(RedisConnectionError, match="cannot connect"):
        await client.execute_command("PING")


async def test_database_and_password_are_applied(redis: Redis) -> None:
    address = redis.address
    other = Redis(Address(host=address.host, port=address.port, db=(address.db + 1) % 16))
    name = key()
    try:
        await other.execute_command("SET", name, "elsewhere")
        assert await redis.execute_command("GET", name) is None
        assert await other.execute_command("GET", name) == b"elsewhere"
        wrong = Redis(Address(host=address.host, port=address.port, password="x"))
        with pytest.raises(RedisReplyError):  # the test Redis has no password
            await wrong.execute_command("PING")
    finally:
        await other.execute_command("DEL", name)
        await other.aclose()


async def test_a_subscription_reconnects(redis: Redis) -> None:
    channel = key()
    pubsub = redis.pubsub()
    try:
        await pubsub.subscribe(channel)
        assert await pubsub.get_message(wait=0.05) is None
        assert await redis.execute_command("PUBLISH", channel, "one") == 1
        assert await pubsub.get_message(wait=1) == b"one"
        # Redis drops the subscriber: the next read fails, the one after subscribes again.
        assert pubsub._connection is not None
        host, port = pubsub._connection._writer.get_extra_info("sockname")[:2]
        assert (
            await redis.execute_command("CLIENT", "KILL", "ADDR", f"{host}:{port}", "SKIPME", "no")
            == 1
        )
        with pytest.raises(RedisConnectionError):
            await pubsub.get_message(wait=1)
        assert await pubsub.get_message(wait=0.05) is None
        assert await redis.execute_command("PUBLISH", channel, "two") == 1
        assert await pubsub.get_message(wait=1) == b"two"
    finally:
        await pubsub.aclose()


async def _namespace_keys(redis: Redis, namespace: str) -> list[bytes]:
    cursor, found = b"0", []
    while True:
        cursor, keys = await redis.execute_command("SCAN", cursor, "MATCH", f"{namespace}:*")
        found.extend(keys)
        if cursor == b"0":
            return found


async def test_a_test_environment_leaves_no_keys_in_redis(redis: Redis, settings: Settings) -> None:
    """``running_env`` on the Redis bus deletes its namespace when it ends: test runs
    would otherwise leave every queue and counter they made in the shared Redis."""
    settings = with_test_redis(settings)
    namespace = settings.redis_namespace
    async with running_env(settings) as env:
        registered = await env.client("iago").post("/register", {"event_types": '["message"]'})
        assert registered.status_code == 200
        assert await _namespace_keys(redis, namespace)
    assert await _namespace_keys(redis, namespace) == []
    # Only the namespace's own keys go: a key beside it stays.
    beside = f"{namespace}-beside:key"
    try:
        await redis.execute_command("SET", beside, "v")
        assert await drop_redis_namespace(redis_url_or_skip(), namespace) == 0
        assert await redis.execute_command("EXISTS", beside) == 1
    finally:
        await redis.execute_command("DEL", beside)
