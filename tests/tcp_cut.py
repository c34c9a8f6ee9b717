"""A TCP relay a test can cut and restore, to stand for a service that goes away."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class CuttableRelay:
    """Relays connections on a local port to ``target``; ``cut()`` drops every
    connection and refuses new ones until ``restore()``."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.cut_off = False
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def cut(self) -> None:
        self.cut_off = True
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()

    def restore(self) -> None:
        self.cut_off = False

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut_off:
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self._writers.update((writer, up_writer))
        await asyncio.gather(
            self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True
        )

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()
            self._writers.discard(writer)


@contextlib.asynccontextmanager
async def cuttable_relay(host: str, port: int) -> AsyncIterator[CuttableRelay]:
    relay = CuttableRelay(host, port)
    await relay.start()
    try:
        yield relay
    finally:
        await relay.close()
