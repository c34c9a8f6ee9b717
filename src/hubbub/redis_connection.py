"""How hubbub reaches Redis: redis-py's asyncio client, replies parsed by hiredis.

Only a server or command configured with a Redis URL imports this module (and with it
redis-py, which costs an idle process about 6 MB); the embedded mode never does, since
its idle memory is at its budget.

Every call is answered or fails within a bounded time: connecting waits at most
``CONNECT_SECONDS``, each reply ``REPLY_SECONDS``, a free pooled connection
``POOL_WAIT_SECONDS``; a connection idle for ``HEALTH_CHECK_SECONDS`` is checked with a
PING before it carries a command, so one that went silent fails before anything is sent.

No command is sent twice. By default redis-py retries a command whose connection failed
or timed out, which, for one Redis ran before its reply was lost (a publish, a script
that appends an event), runs it again. Here the client itself never retries; each caller
decides what a failure means: the event bus keeps the events in the outbox, the rate
limiter counts in its process, a request answers 503 and its client tries again. Only a
pure read may go again once (``read_again``). A pooled connection Redis has closed
meanwhile (a restart, its idle ``timeout``) needs no retry: the pool finds it closed
when handing it out and connects again before sending anything on it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

T = TypeVar("T")

CONNECT_SECONDS = 5.0
REPLY_SECONDS = 5.0
POOL_WAIT_SECONDS = 5.0
HEALTH_CHECK_SECONDS = 30
# Connections per process, one of them the bus's subscription. A burst of re-armed polls
# (one script call each) waits for a free one rather than opening hundreds.
POOL_SIZE = 64

# What a call raises when Redis cannot be reached or does not answer in time (redis-py
# wraps the socket's errors in its own, but not on every path).
UNREACHABLE: tuple[type[Exception], ...] = (RedisConnectionError, RedisTimeoutError, OSError)


def connect_redis(url: str) -> Redis:
    """A client for ``url`` (``redis://``, ``rediss://`` or ``unix://``); it connects on
    its first call."""
    pool = BlockingConnectionPool.from_url(
        url,
        max_connections=POOL_SIZE,
        timeout=POOL_WAIT_SECONDS,
        socket_connect_timeout=CONNECT_SECONDS,
        socket_timeout=REPLY_SECONDS,
        health_check_interval=HEALTH_CHECK_SECONDS,
        retry=Retry(NoBackoff(), 0),
        # RESP2, which the bus's scripts are written for; redis-py's default, RESP3, also
        # turns on maintenance notifications, which skip the pool's check for closed
        # connections.
        protocol=2,
    )
    return Redis.from_pool(pool)


def check_redis_url(url: str) -> None:
    """Raise ``ValueError`` if ``url`` is no Redis URL. redis-py reads a database that is
    not a number as database 0; here it is refused."""
    from urllib.parse import unquote, urlsplit

    BlockingConnectionPool.from_url(url)
    parts = urlsplit(url)
    db = unquote(parts.path).strip("/") if parts.scheme != "unix" else ""
    if db and not db.isdigit():
        raise ValueError(f"the database of a Redis URL is a number, not {db!r}")


# A read that met a broken connection goes once more, on a fresh one; a timeout does not
# (Redis is slow or the network silent: waiting twice as long helps nobody).
_READ_AGAIN = Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,))


async def _nothing(error: Exception) -> None:
    return None


async def read_again(call: Callable[[], Awaitable[T]]) -> T:
    """Run ``call``, a read that changes nothing in Redis, and once more if its
    connection broke: running a read twice is harmless."""
    return await _READ_AGAIN.call_with_retry(call, _nothing)
