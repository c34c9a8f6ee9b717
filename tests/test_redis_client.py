"""hubbub's own Redis client (``redis_client.py``): URLs, encoding, and against the test
Redis (``HUBBUB_TEST_REDIS_URL``) commands, pipelines, scripts after a flush, a pooled
connection Redis has closed, the pool's limit and a subscription that loses its connection."""

from __future__ import annotations

import asyncio
import os
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
from tests.helpers import REDIS_ENV


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
    url = os.environ.get(REDIS_ENV)
    if not url:
        pytest.skip(f"Redis variant: set {REDIS_ENV} to run it")
    client = Redis.from_url(url, max_connections=4, timeout=1)
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


async def test_a_pooled_connection_redis_closed_is_replaced(redis: Redis) -> None:
    pooled = await redis.execute_command("CLIENT", "ID")
    other = Redis(redis.address)
    try:
        assert await other.execute_command("CLIENT", "KILL", "ID", pooled) == 1
    finally:
        await other.aclose()
    # The pooled connection fails at once; the call goes again on a new one.
    replacement = await redis.execute_command("CLIENT", "ID")
    assert replacement != pooled


async def test_the_pool_waits_for_a_free_connection_then_gives_up(redis: Redis) -> None:
    # Four connections (the fixture's limit) held by blocking reads, a fifth call waits.
    names = [key() for _ in range(4)]
    blocked = [asyncio.create_task(redis.execute_command("BLPOP", name, 0.5)) for name in names]
    await asyncio.sleep(0.1)
    started = asyncio.get_running_loop().time()
    assert await redis.execute_command("PING") == b"PONG"
    assert asyncio.get_running_loop().time() - started >= 0.3
    assert await asyncio.gather(*blocked) == [None] * 4
    # Held longer than the pool's timeout (1 s): the waiting call fails instead.
    blocked = [asyncio.create_task(redis.execute_command("BLPOP", name, 2)) for name in names]
    await asyncio.sleep(0.1)
    with pytest.raises(RedisConnectionError, match="came free"):
        await redis.execute_command("PING")
    await asyncio.gather(*blocked)


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
