"""A TCP relay a test can cut and restore, to stand for a service that goes away."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class _Link:
    """One relayed connection: both its writers, and whether the next reply coming back
    on it is to be lost."""

    def __init__(self, *writers: asyncio.StreamWriter) -> None:
        self.writers = writers
        self.lose_reply = False

    def drop(self) -> None:
        for writer in self.writers:
            writer.close()


class CuttableRelay:
    """Relays connections on a local port to ``target``; ``cut()`` drops every
    connection and refuses new ones until ``restore()``. ``lose_reply_to`` and
    ``drop_request_with`` break one connection at a chosen moment of one request."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.cut_off = False
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._lose_reply_to = b""
        self._drop_request_with = b""

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

    def lose_reply_to(self, marker: bytes) -> None:
        """Pass on the next request that contains ``marker``, then drop its connection
        when the reply comes, instead of passing that on: the service did the work, and
        its client cannot know. Other connections, and new ones, are not touched."""
        self._lose_reply_to = marker

    def drop_request_with(self, marker: bytes) -> None:
        """Drop the connection of the next request that contains ``marker``, instead of
        passing the request on: the service never sees it."""
        self._drop_request_with = marker

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut_off:
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self._writers.update((writer, up_writer))
        link = _Link(writer, up_writer)
        await asyncio.gather(
            self._pipe(reader, up_writer, link, requests=True),
            self._pipe(up_reader, writer, link, requests=False),
            return_exceptions=True,
        )

    async def _pipe(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        link: _Link,
        *,
        requests: bool,
    ) -> None:
        try:
            while data := await reader.read(65536):
                if requests and self._drop_request_with and self._drop_request_with in data:
                    self._drop_request_with = b""
                    link.drop()
                    return
                if requests and self._lose_reply_to and self._lose_reply_to in data:
                    self._lose_reply_to = b""
                    link.lose_reply = True
                elif not requests and link.lose_reply:
                    link.drop()
                    return
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
