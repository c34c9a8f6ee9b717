"""uvicorn's httptools protocol, with less held per open connection.

Every client holds a long-poll open on its own connection nearly all the time, so what a
connection costs while it waits is what 10,000 clients cost. uvicorn gives each connection
an ``asyncio.Event`` for write flow control, another for each request's body, and a
``deque`` for pipelined requests; each of the three allocates a 64-slot ``deque`` block
(~620 bytes) at once, though a held poll never pauses writing, has no body to wait for
and is not pipelined. ``longpoll.py`` measured them, with tracemalloc, as 2.2 KB of the
~12 KB an idle poll held. Here they are objects of the same interface that allocate only
when used.

Only public attributes are replaced (the protocol's ``flow`` and ``pipeline``, the
request cycle's ``message_event``); ``tests/test_http_protocol.py`` checks each against
the installed uvicorn.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Literal, cast

from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class LeanEvent(asyncio.Event):
    """``asyncio.Event`` whose list of waiters exists only while someone waits.

    Every method of the base class is overridden; its state is never initialized.
    """

    def __init__(self) -> None:  # no super().__init__(): that allocates the deque
        self._flag = False
        self._futures: list[asyncio.Future[bool]] | None = None

    def __repr__(self) -> str:
        waiting = len(self._futures) if self._futures else 0
        return f"<LeanEvent {'set' if self._flag else 'unset'}, {waiting} waiting>"

    def is_set(self) -> bool:
        return self._flag

    def set(self) -> None:
        if self._flag:
            return
        self._flag = True
        for future in self._futures or ():
            if not future.done():
                future.set_result(True)

    def clear(self) -> None:
        self._flag = False

    async def wait(self) -> Literal[True]:
        if self._flag:
            return True
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if self._futures is None:
            self._futures = []
        self._futures.append(future)
        try:
            await future
            return True
        finally:
            self._futures.remove(future)
            if not self._futures:
                self._futures = None


class LeanFlowControl(FlowControl):
    """uvicorn's write/read flow control; the writable event is made only on a pause.

    Every method is overridden, so nothing depends on the base class's private state."""

    def __init__(self, transport: asyncio.Transport) -> None:  # no deque-backed Event
        self._lean_transport = transport
        self.read_paused = False
        self.write_paused = False
        self._writable: LeanEvent | None = None

    def pause_reading(self) -> None:
        if not self.read_paused:
            self.read_paused = True
            self._lean_transport.pause_reading()

    def resume_reading(self) -> None:
        if self.read_paused:
            self.read_paused = False
            self._lean_transport.resume_reading()

    async def drain(self) -> None:
        if self._writable is not None:
            await self._writable.wait()

    def pause_writing(self) -> None:
        if not self.write_paused:
            self.write_paused = True
            if self._writable is None:
                self._writable = LeanEvent()
            self._writable.clear()

    def resume_writing(self) -> None:
        if self.write_paused:
            self.write_paused = False
            if self._writable is not None:
                self._writable.set()


class LeanPipeline:
    """The two operations uvicorn applies to its queue of pipelined requests, on a list
    made when a request is first pipelined (HTTP pipelining is rare)."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: list[Any] | None = None

    def __bool__(self) -> bool:
        return bool(self._items)

    def __len__(self) -> int:
        return len(self._items) if self._items else 0

    def appendleft(self, item: Any) -> None:
        if self._items is None:
            self._items = []
        self._items.insert(0, item)

    def pop(self) -> Any:
        if not self._items:
            raise IndexError("pop from an empty pipeline")
        return self._items.pop()


class LeanHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's ``httptools`` protocol with the lean pieces above (``uvicorn.Config``'s
    ``http`` option)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Used only as a queue (appendleft, pop, truth), typed as uvicorn's deque.
        self.pipeline = cast(deque[Any], LeanPipeline())

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.flow = LeanFlowControl(transport)

    def on_headers_complete(self) -> None:
        before = self.cycle
        super().on_headers_complete()
        if self.cycle is not before:
            # A new request's cycle, whose task has not run yet: nothing waits on its
            # event. (An upgrade request returns early and keeps the old cycle.)
            self.cycle.message_event = LeanEvent()
