"""HTTP limits of the serving protocol (``hubbub.http_limits.HttpLimits``), against
hubbub under a real uvicorn: oversized request lines and headers, slow heads and bodies,
and requests the parser refuses, each answered in JSON in Zulip's error shape."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import orjson
import pytest

from hubbub.http_limits import MAX_URL_BYTES, HttpLimits
from hubbub.server import uvicorn_options
from hubbub.settings import Settings, load_settings
from tests.events.verify import register
from tests.helpers import TestEnv, basic_auth, running_env
from tests.uvicorn_helpers import served

TIMEOUT = 0.3


@pytest.fixture(autouse=True)
def no_error_logged(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """A refusal must not trip the transport (a write after the answer ended our side
    was an "asyncio: Fatal error on transport" with a traceback in the server's log)."""
    yield
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors


@pytest.fixture
async def limited_env(settings: Settings) -> AsyncIterator[TestEnv]:
    settings = settings.with_(
        http_max_header_kib=8,
        http_header_timeout_seconds=TIMEOUT,
        http_body_timeout_seconds=TIMEOUT,
        heartbeat_seconds=TIMEOUT * 3,
    )
    async with running_env(settings) as env:
        yield env


async def _answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], dict[str, Any]]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    status_line, *lines = head.decode().split("\r\n")
    headers = {}
    for line in lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.lower()] = value.strip()
    body = await asyncio.wait_for(reader.readexactly(int(headers["content-length"])), 10)
    return int(status_line.split()[1]), headers, cast(dict[str, Any], orjson.loads(body))


async def _exchange(env: TestEnv, request: bytes) -> tuple[int, dict[str, str], dict[str, Any]]:
    async with served(env) as address:
        reader, writer = await asyncio.open_connection(*address)
        try:
            writer.write(request)
            await writer.drain()
            return await _answer(reader)
        finally:
            writer.close()


def _error(status: int, body: dict[str, object], expected_status: int, msg: str) -> None:
    assert (status, body) == (
        expected_status,
        {"result": "error", "msg": msg, "code": "BAD_REQUEST"},
    )


async def test_a_url_too_long_is_414_json(limited_env: TestEnv) -> None:
    status, headers, body = await _exchange(
        limited_env, b"GET /api/v1/server_settings?" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n"
    )
    _error(status, body, 414, "Request URL too long (limit: 8192 bytes)")
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"


async def test_the_url_limit_is_at_most_16_kib(env: TestEnv) -> None:
    assert HttpLimits().max_url_bytes == MAX_URL_BYTES == 16 * 1024
    status, _, body = await _exchange(
        env, b"GET /api/v1/server_settings?" + b"a" * 17_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    _error(status, body, 414, "Request URL too long (limit: 16384 bytes)")


async def test_headers_too_large_are_431_json(limited_env: TestEnv) -> None:
    many = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"v" * 100) for i in range(100))
    status, _, body = await _exchange(
        limited_env, b"GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n"
    )
    _error(status, body, 431, "Request headers too large (limit: 8192 bytes)")


async def test_one_endless_header_is_refused_while_it_arrives(limited_env: TestEnv) -> None:
    """A header line that never ends is not held in memory: it is refused once what has
    arrived passes the bound, though the parser has not seen the header whole."""
    async with served(limited_env) as address:
        reader, writer = await asyncio.open_connection(*address)
        try:
            writer.write(b"GET /api/v1/server_settings HTTP/1.1\r\nX-Big: ")
            for _ in range(40):
                writer.write(b"v" * 1024)
                await writer.drain()
            status, _, body = await _answer(reader)
        finally:
            writer.close()
    _error(status, body, 431, "Request headers too large (limit: 8192 bytes)")


async def test_a_request_the_parser_refuses_is_400_json(env: TestEnv) -> None:
    status, _, body = await _exchange(env, b"GET / HTTP/1.1\r\nBad Header\x01: x\r\n\r\n")
    _error(status, body, 400, "Invalid HTTP request")


async def test_a_slow_head_times_out_with_408(limited_env: TestEnv) -> None:
    async with served(limited_env) as address:
        reader, writer = await asyncio.open_connection(*address)
        try:
            writer.write(b"GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n")
            await writer.drain()
            # Trickling a header byte by byte does not keep the connection open.
            for char in b"X-Slow: ab":
                writer.write(bytes([char]))
                await writer.drain()
                await asyncio.sleep(TIMEOUT / 5)
            status, _, body = await _answer(reader)
        finally:
            writer.close()
    _error(status, body, 408, "Request timed out")


async def test_a_slow_second_head_on_a_kept_connection_times_out_with_408(
    limited_env: TestEnv,
) -> None:
    async with served(limited_env) as address:
        reader, writer = await asyncio.open_connection(*address)
        try:
            writer.write(b"GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n\r\n")
            await writer.drain()
            status, _, _ = await _answer(reader)
            assert status == 200
            # The next request's head starts and stalls in its first chunk.
            writer.write(b"GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n")
            await writer.drain()
            status, _, body = await _answer(reader)
        finally:
            writer.close()
    _error(status, body, 408, "Request timed out")


async def test_a_connection_that_sends_nothing_is_closed(limited_env: TestEnv) -> None:
    async with served(limited_env) as address:
        reader, writer = await asyncio.open_connection(*address)
        try:
            assert await asyncio.wait_for(reader.read(), 10) == b""
        finally:
            writer.close()


async def test_a_stalled_body_times_out_with_408(limited_env: TestEnv) -> None:
    async with served(limited_env) as address:
        reader, writer = await asyncio.open_connection(*address)
        try:
            writer.write(
                b"POST /api/v1/fetch_api_key HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/x-www-form-urlencoded\r\n"
                b"Content-Length: 100\r\n\r\nusername=a"
            )
            await writer.drain()
            status, _, body = await _answer(reader)
        finally:
            writer.close()
    _error(status, body, 408, "Request timed out")


async def test_a_body_that_keeps_moving_is_read_whole(limited_env: TestEnv) -> None:
    """The body timeout is a pause, not a deadline: a slow but steady body gets through."""
    payload = b"include_realm_default_subscriptions=false&" + b"x=" + b"y" * 40
    async with served(limited_env) as address:
        reader, writer = await asyncio.open_connection(*address)
        try:
            writer.write(
                b"GET /api/v1/server_settings HTTP/1.1\r\nHost: localhost\r\n"
                b"Content-Type: application/x-www-form-urlencoded\r\n"
                b"Content-Length: " + str(len(payload)).encode() + b"\r\n\r\n"
            )
            for start in range(0, len(payload), 10):
                writer.write(payload[start : start + 10])
                await writer.drain()
                await asyncio.sleep(TIMEOUT / 3)
            status, _, body = await _answer(reader)
        finally:
            writer.close()
    assert status == 200 and body["result"] == "success", body


async def test_a_long_poll_is_not_cut_by_the_timeouts(limited_env: TestEnv) -> None:
    """A request whose head and body are complete waits as long as it needs: a poll
    that outlasts both timeouts ends with its heartbeat."""
    hamlet = limited_env.users["hamlet"]
    queue_id = (await register(limited_env, hamlet))["queue_id"]
    auth = basic_auth(hamlet.delivery_email, hamlet.api_key).encode()
    async with served(limited_env) as address:
        reader, writer = await asyncio.open_connection(*address)
        try:
            writer.write(
                b"GET /api/v1/events?last_event_id=-1&queue_id="
                + queue_id.encode()
                + b" HTTP/1.1\r\nHost: localhost\r\nAuthorization: "
                + auth
                + b"\r\n\r\n"
            )
            await writer.drain()
            status, _, body = await _answer(reader)
        finally:
            writer.close()
    assert status == 200 and [e["type"] for e in body["events"]] == ["heartbeat"]


def test_the_limits_come_from_settings_and_the_environment() -> None:
    settings = load_settings(
        env={
            "HUBBUB_HTTP_MAX_HEADER_KIB": "32",
            "HUBBUB_HTTP_HEADER_TIMEOUT": "5",
            "HUBBUB_HTTP_BODY_TIMEOUT": "7.5",
        }
    )
    protocol = uvicorn_options(settings)["http"]
    assert protocol.keywords["limits"] == HttpLimits(
        max_head_bytes=32 * 1024, header_timeout=5.0, body_timeout=7.5
    )
