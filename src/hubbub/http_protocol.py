"""uvicorn's httptools protocol, with less held per open connection and with hubbub's
HTTP limits (``http_limits.py``): the one module that relies on uvicorn's internals.

uvicorn's public ``http`` setting takes a protocol class; this one subclasses uvicorn's
``HttpToolsProtocol``, whose attributes and hooks are undocumented. It relies on:

- the hooks it overrides, each calling uvicorn's own: asyncio's ``connection_made``,
  ``connection_lost``, ``data_received`` and ``eof_received``; httptools' callbacks
  ``on_message_begin``, ``on_url``, ``on_header``, ``on_headers_complete``, ``on_body``
  and ``on_message_complete``; and ``send_400_response(msg)``, which uvicorn's
  ``data_received`` calls when the parser (or a callback's exception) stops a request;
- the attributes ``transport``, ``loop``, ``server_state.default_headers`` and ``cycle``
  (its ``response_started`` and ``response_complete``);
- what uvicorn does with the three objects it replaces: the protocol's ``flow`` and
  ``pipeline`` and the request cycle's ``message_event``.

``tests/test_http_protocol.py`` checks each against the installed uvicorn, so that a
release that changes them fails a test rather than a server.

Why the replacements: every client holds a long-poll open on its own connection nearly
all the time, so what a connection costs while it waits is what 10,000 clients cost.
uvicorn gives each connection an ``asyncio.Event`` for write flow control, another for
each request's body, and a ``deque`` for pipelined requests; each of the three allocates
a 64-slot ``deque`` block (~620 bytes) at once, though a held poll never pauses writing,
has no body to wait for and is not pipelined. Here they are objects of the same interface
that allocate only when used (``docs/subsystems/requests.md``, "What a held
connection costs").
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Literal, cast

from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from hubbub.http_limits import (
    DEFAULT_LIMITS,
    HttpLimits,
    RequestRefused,
    head_too_large,
    invalid_request,
    timed_out,
    url_too_long,
)

# How long a refused client's further bytes are read (and dropped) before closing.
LINGER_SECONDS = 2.0


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
    ``http`` option), and with ``limits`` on what a request may cost."""

    # Set only on a refusal, so that a connection does not carry them otherwise.
    _refusal: RequestRefused | None = None
    _refused = False

    def __init__(self, *args: Any, limits: HttpLimits = DEFAULT_LIMITS, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Used only as a queue (appendleft, pop, truth), typed as uvicorn's deque.
        self.pipeline = cast(deque[Any], LeanPipeline())
        self.limits = limits
        # Bytes received since the current head began, while it is being read; and the
        # current request's URL and headers as parsed (names, values and their framing).
        self._head_bytes = 0
        self._header_bytes = 0
        self._reading_head = True
        # The header or body deadline; when the body last moved (the event loop's clock).
        self._read_timer: asyncio.TimerHandle | None = None
        self._body_moved = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.flow = LeanFlowControl(transport)
        # A connection that never sends a request is closed too.
        self._arm(self.limits.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # what a refused client still sends is read and dropped
        was_reading_head = self._reading_head
        if was_reading_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if not was_reading_head and self._reading_head:
            # The next request on a kept connection began in this chunk: count it as head,
            # so that a head stalled here times out with an answer, not a silent close.
            self._head_bytes += len(data)
        # Still in the head after this chunk: every byte so far was head. (A head that
        # ended in it was measured exactly by on_url and on_header.)
        if (
            self._reading_head
            and self._head_bytes > self.limits.max_head_bytes
            and not self.transport.is_closing()
        ):
            self._refuse(head_too_large(self.limits))

    def send_400_response(self, msg: str) -> None:
        """What uvicorn calls for a request httptools refused (or a callback below)."""
        self._refuse(self._refusal or invalid_request())

    def _refuse(self, refusal: RequestRefused) -> None:
        """Answer and close. A client may still be sending (the rest of a huge header):
        closing with its bytes unread would reset the connection, and the reset can
        destroy the answer before the client reads it. So the answer ends our side, what
        comes after is dropped, and the connection closes when the client's side ends
        or after ``LINGER_SECONDS``, as nginx's lingering close does."""
        if self._refused:
            return  # answered already (a callback's refusal, then this chunk's size)
        self._disarm()
        self._refused = True
        self.transport.write(refusal.response(self.server_state.default_headers))
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()
        self._read_timer = self.loop.call_later(LINGER_SECONDS, self.transport.close)

    def eof_received(self) -> None:
        if self._refused:
            self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head = True
        self._header_bytes = 0
        if self._read_timer is None:
            self._arm(self.limits.header_timeout)

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        # The URL may come in several parts, all before the first header.
        self._header_bytes += len(url)
        if self._header_bytes > self.limits.max_url_bytes:
            self._refusal = url_too_long(self.limits)
            raise self._refusal  # httptools stops and raises; uvicorn calls send_400_response

    def on_header(self, name: bytes, value: bytes) -> None:
        super().on_header(name, value)
        self._header_bytes += len(name) + len(value) + 4  # ": " and CRLF
        if self._header_bytes > self.limits.max_head_bytes:
            self._refusal = head_too_large(self.limits)
            raise self._refusal

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._head_bytes = 0
        self._disarm()
        before = self.cycle
        super().on_headers_complete()
        if self.cycle is not before:
            # A new request's cycle, whose task has not run yet: nothing waits on its
            # event. (An upgrade request returns early and keeps the old cycle.)
            self.cycle.message_event = LeanEvent()
            self._body_moved = self.loop.time()
            self._arm(self.limits.body_timeout)

    def on_body(self, body: bytes) -> None:
        super().on_body(body)
        self._body_moved = self.loop.time()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._disarm()

    def _arm(self, delay: float) -> None:
        self._disarm()
        self._read_timer = self.loop.call_later(delay, self._read_timed_out)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _read_timed_out(self) -> None:
        self._read_timer = None
        if self.transport.is_closing():
            return
        if self._reading_head:
            if self._head_bytes == 0 and (self.cycle is None or self.cycle.response_complete):
                self.transport.close()  # an idle connection: nothing to answer
            else:
                self._refuse(timed_out())
            return
        # Reading a body: only a pause of the client's counts, not one of the server's
        # (reading paused while the application has not taken what came).
        now = self.loop.time()
        if self.flow.read_paused:
            self._body_moved = now
        idle = now - self._body_moved
        if idle < self.limits.body_timeout:
            self._arm(self.limits.body_timeout - idle)
            return
        if self.cycle is not None and self.cycle.response_started:
            self.transport.close()
        else:
            self._refuse(timed_out())
