"""The coroutine frames a waiting long-poll holds, on both buses (``env`` of this
directory's conftest): each is held for up to a minute by every idle client."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from tests.helpers import TestEnv, assert_success, basic_auth
from tests.uvicorn_helpers import read_response, served


def _awaited_chain(task: asyncio.Task[Any]) -> list[str]:
    """The qualified names of the coroutines a task waits in, outermost first."""
    names = []
    coro: Any = task.get_coro()
    while hasattr(coro, "cr_code"):
        names.append(coro.cr_code.co_qualname)
        coro = coro.cr_await
    return names


async def test_a_waiting_poll_holds_only_the_api_frames_it_needs(env: TestEnv) -> None:
    """Every waiting long-poll holds each coroutine frame of its chain for up to a
    minute, so one closure awaited in between was enough to lose the idle-poll memory
    budget (bench/results/long-polls.md). Between uvicorn's request task and the bus's
    poll, hubbub's chain is the API's way in, ``dispatch`` and the endpoint, no more."""
    user = env.users["hamlet"]
    queue = assert_success(await env.client(user).post("/register", {}))
    auth = basic_auth(user.delivery_email, user.api_key).encode()
    async with served(env) as address:
        reader, writer = await asyncio.open_connection(*address)
        writer.write(
            b"GET /api/v1/events?queue_id=%s&last_event_id=-1 HTTP/1.1\r\n"
            b"Host: localhost\r\nAuthorization: %s\r\n\r\n" % (queue["queue_id"].encode(), auth)
        )
        chains: list[list[str]] = []
        for _ in range(500):
            chains = [_awaited_chain(t) for t in asyncio.all_tasks()]
            chains = [c for c in chains if "get_events" in c]
            if chains:
                break
            await asyncio.sleep(0.01)
        # The heartbeat (0.2 s in tests) answers the poll.
        answer = orjson.loads(await asyncio.wait_for(read_response(reader), 10))
        writer.close()
    assert answer["result"] == "success"
    (chain,) = chains
    start = chain.index("DirectApi.serve")
    assert chain[start : start + 3] == ["DirectApi.serve", "dispatch", "get_events"]
    assert chain[start + 3].endswith("EventBus.get_events")
    assert "HubbubApp.__call__" not in chain
