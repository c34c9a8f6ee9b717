"""How hubbub reaches Redis (``redis_connection.py``, redis-py underneath): URLs, bounded
waits, no command sent twice, a read sent again once, a connection Redis closed replaced,
and no redis-py at all in the embedded mode."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from redis.asyncio import Redis
from redis.asyncio.client import PubSub
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from hubbub import redis_connection
from hubbub.clock import SystemClock
from hubbub.events.redis_bus import RedisEventBus
from hubbub.redis_connection import check_redis_url, connect_redis, read_again
from hubbub.settings import Settings
from tests.helpers import drop_redis_namespace, redis_url_or_skip, running_env, with_test_redis
from tests.tcp_cut import CuttableRelay, cuttable_relay


def test_urls() -> None:
    for good in (
        "redis://127.0.0.1:6379/0",
        "redis://:p%40ss@cache:6380/3",
        "rediss://user:pw@cache",
        "redis://cache?db=2",
        "unix:///run/redis.sock?db=4",
    ):
        check_redis_url(good)
    for bad in ("http://cache", "cache:6379", "redis://cache/x", "redis://cache?db=x"):
        with pytest.raises(ValueError):
            check_redis_url(bad)


def test_the_embedded_mode_never_imports_redis_py(tmp_path: Path) -> None:
    """Its idle memory is at its budget; redis-py would cost it about 6 MB."""
    script = (
        "import asyncio, sys\n"
        "import httpx\n"
        "from hubbub.app import create_app\n"
        "from hubbub.db.migrate import upgrade\n"
        "from hubbub.services import build_services\n"
        "from hubbub.settings import load_settings\n"
        "async def main():\n"
        f"    settings = load_settings(env={{'HUBBUB_DATA_DIR': {str(tmp_path)!r}}})\n"
        "    services = build_services(settings)\n"
        "    await upgrade(services.db)\n"
        "    app = create_app(settings, services=services)\n"
        "    async with app.router.lifespan_context(app):\n"
        "        transport = httpx.ASGITransport(app=app)\n"
        "        async with httpx.AsyncClient(transport=transport, base_url='http://x') as c:\n"
        "            assert (await c.get('/api/v1/server_settings')).status_code == 200\n"
        "            assert (await c.get('/api/v1/users/me')).status_code == 401\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('redis', 'hiredis')))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]", run.stdout


@pytest.fixture
async def redis() -> AsyncIterator[Redis]:
    client = connect_redis(redis_url_or_skip())
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def relay() -> AsyncIterator[CuttableRelay]:
    url = urlsplit(redis_url_or_skip())
    async with cuttable_relay(url.hostname or "127.0.0.1", url.port or 6379) as cut:
        yield cut


@pytest.fixture
async def relayed(relay: CuttableRelay) -> AsyncIterator[Redis]:
    """A client reaching the test Redis through ``relay``."""
    url = urlsplit(redis_url_or_skip())
    client = connect_redis(url._replace(netloc=f"127.0.0.1:{relay.port}").geturl())
    try:
        yield client
    finally:
        await client.aclose()


def key() -> str:
    return f"test-client-{uuid.uuid4().hex}"


async def test_a_command_whose_reply_was_lost_is_not_sent_again(
    redis: Redis, relayed: Redis, relay: CuttableRelay
) -> None:
    name = key()
    try:
        relay.lose_reply_to(b"INCR")
        with pytest.raises(RedisConnectionError):
            await relayed.incr(name)
        assert await redis.get(name) == b"1"  # Redis ran it, once
        # The next command goes on a new connection.
        assert await relayed.incr(name) == 2
    finally:
        await redis.delete(name)


async def test_a_read_whose_reply_was_lost_goes_again_once(
    redis: Redis, relayed: Redis, relay: CuttableRelay
) -> None:
    name = key()
    try:
        await redis.set(name, "v")
        relay.lose_reply_to(b"GET")
        assert await read_again(lambda: relayed.get(name)) == b"v"
        # Once only: a second failure is the caller's.
        relay.cut()
        with pytest.raises(RedisConnectionError):
            await read_again(lambda: relayed.get(name))
    finally:
        await redis.delete(name)


async def test_a_silent_redis_fails_within_the_reply_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server that accepts the connection and never answers (a hung Redis, a network
    dropping the replies): the call fails in bounded time instead of waiting forever."""

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client gives up

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setattr(redis_connection, "REPLY_SECONDS", 0.3)
    client = connect_redis(f"redis://127.0.0.1:{port}/0")
    try:
        started = time.monotonic()
        with pytest.raises(RedisTimeoutError):
            await client.ping()
        assert time.monotonic() - started < 3
    finally:
        await client.aclose()
        server.close()
        await server.wait_closed()


async def test_an_unreachable_redis() -> None:
    client = connect_redis("redis://127.0.0.1:1/0")
    try:
        with pytest.raises(RedisConnectionError):
            await client.ping()
    finally:
        await client.aclose()


async def test_a_connection_redis_closed_is_replaced(redis: Redis) -> None:
    """A pooled connection Redis closed while it was idle (a restart, its ``timeout``)
    is found closed when it is taken from the pool: the next call is answered, on a new
    connection, and nothing was sent twice to get there."""
    first = await redis.client_id()
    other = connect_redis(redis_url_or_skip())
    try:
        assert await other.client_kill_filter(_id=str(first)) == 1
    finally:
        await other.aclose()
    await asyncio.sleep(0.1)  # the close reaches the client
    replacement = await redis.client_id()
    assert replacement != first
    assert await redis.client_id() == replacement


async def test_the_bus_stops_listening_even_when_its_cancellation_is_lost(
    redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Python 3.11 redis-py can lose a cancellation (its ``asyncio.wait_for`` around a
    write returns the write's result when both come at once): the bus's listener, a loop,
    must end all the same when the bus closes."""
    original = PubSub.get_message
    lost: list[bool] = []

    async def losing_the_first_cancellation(self: PubSub, **kwargs: Any) -> Any:
        try:
            return await original(self, **kwargs)
        except asyncio.CancelledError:
            if lost:
                raise
            lost.append(True)
            return None

    monkeypatch.setattr(PubSub, "get_message", losing_the_first_cancellation)
    bus = RedisEventBus(redis, SystemClock(), namespace=f"test-{uuid.uuid4().hex}")
    await bus.start()
    await asyncio.sleep(0.1)
    closing = asyncio.create_task(bus.close())
    done, _ = await asyncio.wait({closing}, timeout=5)
    if not done:  # cancelled again, the listener ends; the test fails
        closing.cancel()
        await asyncio.wait({closing})
    assert lost
    assert done


async def _namespace_keys(redis: Redis, namespace: str) -> list[bytes]:
    return [name async for name in redis.scan_iter(match=f"{namespace}:*")]


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
        await redis.set(beside, "v")
        assert await drop_redis_namespace(redis_url_or_skip(), namespace) == 0
        assert await redis.exists(beside) == 1
    finally:
        await redis.delete(beside)
