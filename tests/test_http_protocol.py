"""The lean uvicorn protocol (``hubbub.http_protocol``): the installed uvicorn still has
the internals it relies on, its pieces keep the semantics uvicorn relies on, and a real
uvicorn server built with it answers plain, body-carrying, pipelined and slow-reading
requests, with the lean pieces in place; and hubbub's application under uvicorn with
``hubbub serve``'s options."""

from __future__ import annotations

import asyncio
import inspect
import re
import socket
from collections.abc import AsyncIterator
from typing import Any
from unittest import mock

import httptools
import orjson
import pytest
import uvicorn
from uvicorn.protocols.http import httptools_impl
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from hubbub.http_protocol import (
    LeanEvent,
    LeanFlowControl,
    LeanHttpToolsProtocol,
    LeanPipeline,
)
from hubbub.server import uvicorn_options
from tests.helpers import TestEnv, basic_auth
from tests.uvicorn_helpers import read_response, served


async def test_lean_event_wakes_every_waiter_and_keeps_no_list_when_idle() -> None:
    event = LeanEvent()
    assert not event.is_set() and event._futures is None
    waiters = [asyncio.create_task(event.wait()) for _ in range(3)]
    await asyncio.sleep(0)
    assert event._futures is not None and len(event._futures) == 3
    assert not any(w.done() for w in waiters)
    event.set()
    assert await asyncio.gather(*waiters) == [True, True, True]
    assert event._futures is None and event.is_set()
    assert await event.wait() is True  # already set: no wait
    event.clear()
    late = asyncio.create_task(event.wait())
    await asyncio.sleep(0)
    assert not late.done()
    late.cancel()
    with pytest.raises(asyncio.CancelledError):
        await late
    assert event._futures is None  # a cancelled waiter leaves nothing behind
    event.set()
    event.set()  # setting twice is harmless
    assert event.is_set() and "set" in repr(event)


async def test_lean_flow_control_drains_only_while_writing_is_paused() -> None:
    transport = mock.Mock(spec=asyncio.Transport)
    flow = LeanFlowControl(transport)
    await asyncio.wait_for(flow.drain(), 1)  # never paused: returns at once
    flow.pause_writing()
    assert flow.write_paused
    draining = asyncio.create_task(flow.drain())
    await asyncio.sleep(0.01)
    assert not draining.done()
    flow.resume_writing()
    await asyncio.wait_for(draining, 1)
    await asyncio.wait_for(flow.drain(), 1)
    flow.pause_reading()
    flow.pause_reading()
    flow.resume_reading()
    flow.resume_reading()
    transport.pause_reading.assert_called_once_with()
    transport.resume_reading.assert_called_once_with()


def test_lean_pipeline_is_first_in_first_out_as_uvicorn_uses_it() -> None:
    pipeline = LeanPipeline()
    assert not pipeline and len(pipeline) == 0
    with pytest.raises(IndexError):
        pipeline.pop()
    for item in ("a", "b", "c"):
        pipeline.appendleft(item)
    assert pipeline and len(pipeline) == 3
    assert [pipeline.pop(), pipeline.pop(), pipeline.pop()] == ["a", "b", "c"]
    assert not pipeline


# --- the uvicorn internals the protocol relies on (its module docstring lists them) ------

# Each hook the protocol overrides, with uvicorn's parameters; the override calls it.
HOOKS = {
    "connection_made": ["self", "transport"],
    "connection_lost": ["self", "exc"],
    "data_received": ["self", "data"],
    "eof_received": ["self"],
    "send_400_response": ["self", "msg"],
    "on_message_begin": ["self"],
    "on_url": ["self", "url"],
    "on_header": ["self", "name", "value"],
    "on_headers_complete": ["self"],
    "on_body": ["self", "body"],
    "on_message_complete": ["self"],
}


def _own_names(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("__")}


def test_uvicorn_still_has_the_hooks_the_protocol_overrides() -> None:
    for name, parameters in HOOKS.items():
        hook = getattr(HttpToolsProtocol, name)
        assert list(inspect.signature(hook).parameters) == parameters, name
        assert name in vars(LeanHttpToolsProtocol), name
    # A callback's exception stops httptools with a parser error, which uvicorn answers
    # through send_400_response: that is how a refusal in on_url or on_header is sent.
    assert issubclass(httptools.HttpParserCallbackError, httptools.HttpParserError)
    received = inspect.getsource(HttpToolsProtocol.data_received)
    assert "except httptools.HttpParserError" in received
    assert "self.send_400_response(" in received


def test_uvicorn_still_keeps_the_state_the_protocol_reads() -> None:
    assert isinstance(ServerState().default_headers, list)
    source = inspect.getsource(HttpToolsProtocol)
    for attribute in ("transport", "loop", "server_state", "cycle", "flow", "pipeline"):
        assert re.search(rf"self\.{attribute}(: [^=\n]+)? = ", source), attribute
    cycle = inspect.getsource(RequestResponseCycle.__init__)
    for attribute in ("message_event", "response_started", "response_complete"):
        assert f"self.{attribute} = " in cycle, attribute
    # The lean pieces are put in place after uvicorn makes its own: the flow control in
    # connection_made, the body event in on_headers_complete (with the new cycle).
    assert "self.flow = FlowControl(" in inspect.getsource(HttpToolsProtocol.connection_made)
    made = inspect.getsource(HttpToolsProtocol.on_headers_complete)
    assert "self.cycle = RequestResponseCycle(" in made and "message_event=" in made


def test_uvicorn_uses_the_replaced_objects_only_as_the_lean_ones_allow() -> None:
    """What uvicorn's httptools module calls on the flow control, the pipeline and the
    body event is what their lean replacements implement themselves."""
    source = inspect.getsource(httptools_impl)
    flow = LeanFlowControl(mock.Mock(spec=asyncio.Transport))
    flow_uses = set(re.findall(r"\bflow\.(\w+)", source))
    assert flow_uses and flow_uses <= _own_names(LeanFlowControl) | set(vars(flow)), flow_uses
    pipeline_uses = set(re.findall(r"\bpipeline\.(\w+)", source))
    assert pipeline_uses and pipeline_uses <= _own_names(LeanPipeline), pipeline_uses
    event_uses = set(re.findall(r"\bmessage_event\.(\w+)", source))
    assert event_uses and event_uses <= _own_names(LeanEvent), event_uses
    # The bases' own state is never set up, so no method of theirs may be left to run.
    assert _own_names(FlowControl) <= _own_names(LeanFlowControl)
    public_event = {name for name in vars(asyncio.Event) if not name.startswith("_")}
    assert public_event <= _own_names(LeanEvent)


# --- a real uvicorn server with the lean protocol --------------------------------------

seen_protocols: list[LeanHttpToolsProtocol] = []


async def echo_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Echoes the path and the body, read in as many chunks as the client sent."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    payload = scope["path"].encode() + b":" + body
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})


@pytest.fixture
async def lean_server() -> AsyncIterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.listen()  # connections wait in the backlog until the server accepts them

    class Recording(LeanHttpToolsProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            seen_protocols.append(self)

    config = uvicorn.Config(echo_app, http=Recording, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    yield port
    server.should_exit = True
    await asyncio.wait_for(task, 10)
    seen_protocols.clear()


async def test_uvicorn_with_the_lean_protocol_answers_bodies_and_pipelined_requests(
    lean_server: int,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", lean_server)
    try:
        # A body sent in two parts: the request waits on its (lean) message event.
        writer.write(b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhello")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(b"world")
        assert await asyncio.wait_for(read_response(reader), 5) == b"/a:helloworld"
        # Three requests in one write: the later two wait in the (lean) pipeline.
        writer.write(
            b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n"
            b"POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyz"
            b"GET /d HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        await writer.drain()
        answers = [await asyncio.wait_for(read_response(reader), 5) for _ in range(3)]
        assert answers == [b"/b:", b"/c:xyz", b"/d:"]
        (protocol,) = seen_protocols
        # The installed uvicorn still keeps these where the lean protocol replaces them.
        assert isinstance(protocol.flow, LeanFlowControl)
        assert isinstance(protocol.pipeline, LeanPipeline) and not protocol.pipeline
        assert isinstance(protocol.cycle.message_event, LeanEvent)
    finally:
        writer.close()


async def test_a_large_response_to_a_slow_reader_pauses_and_resumes_writing(
    lean_server: int,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", lean_server, limit=2**24)
    body = b"x" * (8 * 1024 * 1024)  # echoed back: more than the socket buffers hold
    try:
        writer.write(
            b"POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )
        await writer.drain()
        await asyncio.sleep(0.2)  # the server's writes fill the buffers and pause
        answer = await asyncio.wait_for(read_response(reader), 20)
        assert answer == b"/big:" + body
        (protocol,) = seen_protocols
        flow = protocol.flow
        assert isinstance(flow, LeanFlowControl)
        # Writing was paused (the event exists only then) and has resumed.
        assert flow._writable is not None and flow._writable.is_set()
        assert not flow.write_paused
    finally:
        writer.close()


async def test_hubbub_served_by_uvicorn_with_its_options(env: TestEnv) -> None:
    """The application under uvicorn with ``hubbub serve``'s options: its ``__call__``
    returns a coroutine rather than being one, which uvicorn's "auto" interface would
    take for ASGI 2 and break every request; the options say ASGI 3. An authenticated
    API request, an unauthenticated one, and a path left to Starlette's stack."""
    assert uvicorn_options(env.services.settings)["interface"] == "asgi3"
    user = env.users["desdemona"]
    auth = basic_auth(user.delivery_email, user.api_key).encode()
    answers = []
    async with served(env) as address:
        reader, writer = await asyncio.open_connection(*address)
        for request in [
            b"GET /api/v1/users/me HTTP/1.1\r\nHost: localhost\r\nAuthorization: " + auth,
            b"GET /api/v1/server_settings HTTP/1.1\r\nHost: localhost",
            b"GET /no/such/page HTTP/1.1\r\nHost: localhost",
        ]:
            writer.write(request + b"\r\n\r\n")
            answers.append(orjson.loads(await asyncio.wait_for(read_response(reader), 10)))
        writer.close()
    me, server_settings, missing = answers
    assert me["result"] == "success" and me["user_id"] == user.id
    assert server_settings["result"] == "success" and "zulip_feature_level" in server_settings
    assert missing["result"] == "error"
