"""hubbub under a real uvicorn in the test's event loop, and reading its answers."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import uvicorn

from hubbub.server import uvicorn_options
from tests.helpers import TestEnv


@contextlib.asynccontextmanager
async def served(env: TestEnv) -> AsyncIterator[tuple[str, int]]:
    """``env``'s application under a real uvicorn with ``hubbub serve``'s options
    (``server.uvicorn_options``), on a free port of 127.0.0.1."""
    options = uvicorn_options(env.services.settings)
    del options["host"], options["port"]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()  # connections wait in the backlog until the server accepts them
    # The services are the fixture's, already started: no second start by the lifespan.
    config = uvicorn.Config(env.app, **{**options, "log_level": "warning", "lifespan": "off"})
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield sock.getsockname()
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


async def read_response(reader: asyncio.StreamReader) -> bytes:
    """One HTTP response's body, by its Content-Length."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return await reader.readexactly(length)
