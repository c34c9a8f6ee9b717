"""A small asyncio Redis client: the commands, pipelines, scripts and subscription that the
event bus and the rate limiter use, over one multiplexed connection.

Why not redis-py: importing ``redis.asyncio`` cost the idle server 5.2 MB (its command
mixins, cluster, sentinel and OpenTelemetry modules), against issue 9's idle budget of
80 MB, and every command went through its layers of retry and response callbacks. Replies
are parsed by ``hiredis`` (C), as they were under redis-py.

Errors: a connection that fails (refused, closed, reset) raises ``RedisConnectionError``
for every request waiting on it, and the next request opens a new one; an error reply
raises ``RedisReplyError``. No command that blocks the connection (``BLPOP``, ``WAIT``)
may be sent: every request shares it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ssl
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import hiredis

Arg = bytes | str | int | float
READ_SIZE = 65536


class RedisError(Exception):
    """A Redis call failed."""


class RedisConnectionError(RedisError):
    """Redis could not be reached, or the connection broke mid-call."""


class NothingAnswered(RedisConnectionError):
    """The connection failed before any reply to the request: on a pooled connection, one
    Redis had already closed (a restart, a client timeout), so the request never ran."""


class RedisReplyError(RedisError):
    """Redis answered with an error (``ERR ...``, ``NOSCRIPT ...``, ``WRONGTYPE ...``)."""


@dataclass(frozen=True)
class Address:
    host: str = "127.0.0.1"
    port: int = 6379
    path: str = ""  # a Unix socket instead of host and port
    db: int = 0
    username: str = ""
    password: str = ""
    tls: bool = False

    @classmethod
    def from_url(cls, url: str) -> Address:
        """``redis://[[user]:password@]host[:port][/db]``, ``rediss://`` (TLS) or
        ``unix:///path/to/socket[?db=N]``."""
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        if parts.scheme not in ("redis", "rediss", "unix"):
            raise ValueError(f"a Redis URL starts with redis://, rediss:// or unix://, not {url!r}")
        db_text = query.get("db", [""])[0] or parts.path.lstrip("/")
        if parts.scheme == "unix":
            db_text = query.get("db", [""])[0]
        try:
            db = int(db_text or 0)
        except ValueError:
            raise ValueError(f"the database of a Redis URL is a number, not {db_text!r}") from None
        return cls(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 6379,
            path=unquote(parts.path) if parts.scheme == "unix" else "",
            db=db,
            username=unquote(parts.username or ""),
            password=unquote(parts.password or ""),
            tls=parts.scheme == "rediss",
        )


def encode(args: Sequence[Arg]) -> bytes:
    """One command in RESP: an array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, bytes):
            data = arg
        elif isinstance(arg, str):
            data = arg.encode()
        elif isinstance(arg, int) and not isinstance(arg, bool):
            data = b"%d" % arg
        elif isinstance(arg, float):
            data = repr(arg).encode()  # repr round-trips; Redis reads "inf" and "1e-05"
        else:
            raise TypeError(f"a Redis argument is bytes, str, int or float, not {arg!r}")
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def raise_for_error(reply: Any) -> Any:
    if isinstance(reply, hiredis.ReplyError):
        raise RedisReplyError(str(reply))
    return reply


class Connection:
    """One connection: requests written whole, replies read in order."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._parser = hiredis.Reader()

    @classmethod
    async def open(cls, address: Address) -> Connection:
        try:
            if address.path:
                reader, writer = await asyncio.open_unix_connection(address.path)
            else:
                context = ssl.create_default_context() if address.tls else None
                reader, writer = await asyncio.open_connection(
                    address.host, address.port, ssl=context
                )
        except OSError as exc:
            where = address.path or f"{address.host}:{address.port}"
            raise RedisConnectionError(f"cannot connect to Redis at {where}: {exc}") from exc
        connection = cls(reader, writer)
        try:
            setup: list[list[Arg]] = []
            if address.password:
                user = [address.username] if address.username else []
                setup.append(["AUTH", *user, address.password])
            if address.db:
                setup.append(["SELECT", address.db])
            if setup:
                await connection.call(b"".join(encode(command) for command in setup), len(setup))
        except BaseException:
            connection.close()
            raise
        return connection

    async def call(self, packed: bytes, replies: int) -> list[Any]:
        """Write ``packed`` and read its ``replies`` replies, raising the first error reply:
        a new connection's set-up (``AUTH``, ``SELECT``) and a subscription's ``SUBSCRIBE``,
        before anything else shares the connection."""
        self._writer.write(packed)
        return [raise_for_error(await self.read()) for _ in range(replies)]

    async def read(self) -> Any:
        """The next reply (error replies are returned, as ``hiredis.ReplyError``)."""
        while True:
            reply = self._parser.gets()
            if reply is not False:
                return reply
            try:
                data = await self._reader.read(READ_SIZE)
            except OSError as exc:
                raise RedisConnectionError(f"lost the Redis connection: {exc}") from exc
            if not data:
                raise RedisConnectionError("Redis closed the connection")
            self._parser.feed(data)

    def write(self, packed: bytes) -> None:
        self._writer.write(packed)

    def close(self) -> None:
        self._writer.close()


# Requests written together at most: a batch goes out as it fills up, not only at the end
# of the event loop's turn, so that Redis works while the turn goes on.
FLUSH_EVERY = 32


class Multiplexed:
    """One connection carrying every request at once: each is written whole as it comes
    and Redis answers in order, so one reader task hands each reply to the oldest request
    still waiting. No request waits for another to finish before it is sent (the pool of
    64 connections this replaced made a burst of 1,000 re-armed polls queue for a free one,
    with a timer each), and a read often brings many replies at once. The requests made in
    one turn of the event loop go out in one write at its end: 1,000 re-armed polls were
    1,000 ``send`` calls (~30 µs each, `inprocess.py fanout --profile`)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        # Requests sent and not yet answered, oldest first: (future, replies, received).
        self._waiting: deque[tuple[asyncio.Future[list[Any]], int, list[Any]]] = deque()
        # Requests of this turn of the event loop, not written yet (in ``_waiting`` already).
        self._outgoing: list[bytes] = []
        self.failed = False
        self._loop = asyncio.get_running_loop()
        self._reader = self._loop.create_task(self._read_replies())

    def request(self, packed: bytes, replies: int) -> asyncio.Future[list[Any]]:
        answer: asyncio.Future[list[Any]] = self._loop.create_future()
        self._waiting.append((answer, replies, []))
        if len(self._waiting) == 1:
            # Nothing else in flight: no batch to join, so no reason to wait.
            self.connection.write(packed)
            return answer
        if not self._outgoing:
            self._loop.call_soon(self._flush)
        self._outgoing.append(packed)
        if len(self._outgoing) >= FLUSH_EVERY:
            # A long turn (1,000 polls answered and re-armed) keeps Redis busy meanwhile.
            self._flush()
        return answer

    def _flush(self) -> None:
        outgoing, self._outgoing = self._outgoing, []
        if not outgoing:  # flushed early, when the batch filled up
            return
        # A failed connection has answered every waiting request with its error already.
        if not self.failed:
            self.connection.write(outgoing[0] if len(outgoing) == 1 else b"".join(outgoing))

    async def _read_replies(self) -> None:
        try:
            while True:
                reply = await self.connection.read()
                if not self._waiting:
                    raise RedisConnectionError("Redis sent a reply nothing asked for")
                answer, replies, received = self._waiting[0]
                received.append(reply)
                if len(received) == replies:
                    self._waiting.popleft()
                    if not answer.done():  # a caller cancelled meanwhile: its reply is dropped
                        answer.set_result(received)
        except BaseException as exc:
            self.failed = True
            self.connection.close()
            if isinstance(exc, RedisError):
                reason = str(exc)
            elif isinstance(exc, asyncio.CancelledError):
                reason = "the Redis client was closed"
            else:  # a reply hiredis could not parse, say
                reason = f"the Redis connection failed: {exc!r}"
            while self._waiting:
                answer, _, received = self._waiting.popleft()
                if not answer.done():
                    # Nothing answered: Redis had closed the connection before reading the
                    # request (a restart, a client timeout), so it never ran.
                    retry = not received and not isinstance(exc, asyncio.CancelledError)
                    kind = NothingAnswered if retry else RedisConnectionError
                    answer.set_exception(kind(reason))
            if not isinstance(exc, (RedisError, asyncio.CancelledError)):
                raise

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


class Redis:
    """Commands over one multiplexed connection (``Multiplexed``), opened on first use and
    again after it fails."""

    def __init__(self, address: Address) -> None:
        self.address = address
        self._current: Multiplexed | None = None
        self._opening: asyncio.Lock | None = None

    @classmethod
    def from_url(cls, url: str) -> Redis:
        return cls(Address.from_url(url))

    async def _connection(self) -> Multiplexed:
        current = self._current
        if current is not None and not current.failed:
            return current
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:  # a burst of requests opens one connection, not many
            current = self._current
            if current is None or current.failed:
                current = Multiplexed(await Connection.open(self.address))
                self._current = current
            return current

    async def request(self, packed: bytes, replies: int) -> list[Any]:
        """Send ``packed`` (one or more commands) and return its ``replies`` replies."""
        try:
            return await (await self._connection()).request(packed, replies)
        except NothingAnswered:
            # The connection had been closed by Redis; the request goes again, once.
            return await (await self._connection()).request(packed, replies)

    async def execute_command(self, *args: Arg) -> Any:
        """One command; its reply (bytes, int, None or a list of them)."""
        (reply,) = await self.request(encode(args), 1)
        return raise_for_error(reply)

    def pipeline(self, transaction: bool = True) -> Pipeline:
        return Pipeline(self, transaction)

    def register_script(self, source: str) -> Script:
        return Script(self, source)

    def pubsub(self) -> PubSub:
        return PubSub(self.address)

    async def aclose(self) -> None:
        if self._current is not None:
            await self._current.close()
            self._current = None


class Pipeline:
    """Commands sent in one write and answered in one read; with ``transaction``, inside
    MULTI/EXEC so that no other client's command runs between them."""

    def __init__(self, client: Redis, transaction: bool) -> None:
        self.client = client
        self.transaction = transaction
        self.commands: list[bytes] = []

    async def __aenter__(self) -> Pipeline:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.commands.clear()

    def command(self, *args: Arg) -> None:
        self.commands.append(encode(args))

    async def execute(self) -> list[Any]:
        """The commands' replies in order; the first error reply is raised."""
        commands, self.commands = self.commands, []
        if not commands:
            return []
        if not self.transaction:
            replies = await self.client.request(b"".join(commands), len(commands))
        else:
            packed = b"".join([encode(["MULTI"]), *commands, encode(["EXEC"])])
            answers = await self.client.request(packed, len(commands) + 2)
            for answer in answers[:-1]:
                raise_for_error(answer)  # refused while queued: EXEC discards them all
            replies = raise_for_error(answers[-1])
        for reply in replies:
            raise_for_error(reply)
        return list(replies)


class Script:
    """A Lua script run by its SHA-1 (``EVALSHA``), sent whole only when Redis does not
    have it (after a restart or ``SCRIPT FLUSH``)."""

    def __init__(self, client: Redis, source: str) -> None:
        self.client = client
        self.source = source.encode()
        self.sha = hashlib.sha1(self.source).hexdigest()

    async def __call__(self, keys: Sequence[Arg], args: Sequence[Arg] = ()) -> Any:
        try:
            return await self.client.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)
        except RedisReplyError as exc:
            if not str(exc).startswith("NOSCRIPT"):
                raise
        # Nothing ran: EVAL runs it and caches it for the next EVALSHA.
        return await self.client.execute_command("EVAL", self.source, len(keys), *keys, *args)

    def queue(self, pipeline: Pipeline, keys: Sequence[Arg], args: Sequence[Arg] = ()) -> None:
        """Add a run of the script to ``pipeline``. Sent whole (EVAL, which Redis looks up
        by its SHA-1 and compiles only once): a NOSCRIPT there could not be retried without
        running the pipeline's other commands twice."""
        pipeline.command("EVAL", self.source, len(keys), *keys, *args)


class PubSub:
    """A subscription on its own connection; after a failure the next ``get_message``
    connects again and subscribes to the same channels."""

    def __init__(self, address: Address) -> None:
        self.address = address
        self.channels: list[str] = []
        self._connection: Connection | None = None

    async def subscribe(self, *channels: str) -> None:
        self.channels.extend(channels)
        if self._connection is None:
            await self._connect()
        else:
            await self._subscribe(self._connection, list(channels))

    async def _connect(self) -> Connection:
        connection = await Connection.open(self.address)
        try:
            await self._subscribe(connection, self.channels)
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        return connection

    @staticmethod
    async def _subscribe(connection: Connection, channels: list[str]) -> None:
        if channels:
            await connection.call(encode(["SUBSCRIBE", *channels]), len(channels))

    async def get_message(self, wait: float) -> bytes | None:
        """The data of the next message on the subscribed channels, or None if none comes
        within ``wait`` seconds."""
        connection = self._connection or await self._connect()
        try:
            async with asyncio.timeout(wait):
                while True:
                    reply = raise_for_error(await connection.read())
                    if isinstance(reply, list) and reply and reply[0] == b"message":
                        data: bytes = reply[2]
                        return data
        except TimeoutError:
            return None
        except RedisError:
            connection.close()
            self._connection = None
            raise

    async def aclose(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
