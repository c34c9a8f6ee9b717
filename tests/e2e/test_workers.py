"""Scale-out: several worker processes on one PostgreSQL database and one Redis.

Two kinds of "worker" are checked: two separate ``hubbub serve`` processes (so the test
decides which one serves each request, which ``--workers`` leaves to the kernel), and
``hubbub serve --workers 2``, whose worker processes share one port. Either way a message
sent through one worker must reach a long-poll held by another, and a worker killed with
SIGKILL must lose no acknowledged message and no event queue: messages are committed before
they are acknowledged, and queues live in Redis, not in the process.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import zulip

from tests.e2e.client import assert_ok, close, make_client
from tests.e2e.conftest import (
    PG_ENV,
    HubbubServer,
    serving,
    serving_workers,
    shared_backend,
    start_serve,
    stop_serve,
)
from tests.helpers import REDIS_ENV

pytestmark = pytest.mark.skipif(
    not (os.environ.get(REDIS_ENV) and os.environ.get(PG_ENV)),
    reason=f"multi-worker tests: set {PG_ENV} and {REDIS_ENV} to run them",
)


def _client(server: HubbubServer, email: str, api_key: str) -> zulip.Client:
    return make_client(email=email, api_key=api_key, site=server.url)


def _wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


class _Poll:
    """``GET /events`` for one queue in a thread, through a given client."""

    def __init__(self, client: zulip.Client, queue_id: str, last_event_id: int) -> None:
        self.result: dict[str, Any] = {}
        self.error: BaseException | None = None

        def run() -> None:
            try:
                self.result.update(
                    client.get_events(queue_id=queue_id, last_event_id=last_event_id)
                )
            except BaseException as exc:  # a killed server drops the connection
                self.error = exc

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def join(self, timeout: float = 20.0) -> dict[str, Any]:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the long-poll did not return"
        return self.result


def _is_waiting(server: HubbubServer, email: str, api_key: str) -> bool:
    """The poll has been read by the server (it cannot be observed directly)."""
    time.sleep(0.3)
    response = httpx.get(f"{server.url}/api/v1/users/me", auth=(email, api_key), timeout=5)
    return response.status_code == 200


def _message_events(events: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {e["message"]["id"]: e["message"] for e in events if e["type"] == "message"}


def _drain(client: zulip.Client, queue_id: str, want: set[int]) -> dict[int, dict[str, Any]]:
    """Poll the queue (acknowledging as we go) until every id in ``want`` arrived."""
    seen: dict[int, dict[str, Any]] = {}
    last = -1
    deadline = time.monotonic() + 30
    while not want <= seen.keys():
        assert time.monotonic() < deadline, f"missing events for {sorted(want - seen.keys())}"
        got = assert_ok(client.get_events(queue_id=queue_id, last_event_id=last))
        seen.update(_message_events(got["events"]))
        if got["events"]:
            last = max(e["id"] for e in got["events"])
    return seen


def _stored(client: zulip.Client, stream: str) -> dict[int, str]:
    found = assert_ok(
        client.get_messages(
            {
                "anchor": "newest",
                "num_before": 1000,
                "num_after": 0,
                "narrow": [{"operator": "stream", "operand": stream}],
                "apply_markdown": False,
            }
        )
    )
    return {m["id"]: m["content"] for m in found["messages"]}


def _send_until_stopped(
    client: zulip.Client, stream: str, stop: threading.Event, acknowledged: dict[int, str]
) -> None:
    """Send numbered messages until ``stop``; record each one the server acknowledged."""
    number = 0
    while not stop.is_set():
        number += 1
        content = f"message {number} from {threading.current_thread().name}"
        try:
            result = client.send_message(
                {"type": "stream", "to": stream, "topic": "load", "content": content}
            )
        except Exception:  # the worker was killed mid-request: not acknowledged
            continue
        if result.get("result") == "success":
            acknowledged[result["id"]] = content


class _Senders:
    """``count`` threads sending through ``server``, each with its own client (its own
    keep-alive connection, so under ``--workers`` the kernel spreads them over workers)."""

    def __init__(self, server: HubbubServer, email: str, api_key: str, count: int) -> None:
        self.stop = threading.Event()
        self.acknowledged: dict[int, str] = {}
        self.threads = [
            threading.Thread(
                target=_send_until_stopped,
                args=(_client(server, email, api_key), "scale", self.stop, self.acknowledged),
                name=f"sender{i}",
                daemon=True,
            )
            for i in range(count)
        ]
        for thread in self.threads:
            thread.start()

    def wait_for(self, count: int) -> None:
        _wait_for(lambda: len(self.acknowledged) >= count, timeout=30)

    def finish(self) -> dict[int, str]:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)
        return self.acknowledged


def test_message_crosses_workers_and_survives_a_killed_worker(tmp_path: Path) -> None:
    with shared_backend("hubbub_workers_two") as (database_url, env, extra):
        one = start_serve(tmp_path / "one", database_url=database_url, extra_args=extra, env=env)
        two: HubbubServer | None = None
        try:
            owner = one.owner()
            two = start_serve(
                tmp_path / "two", database_url=database_url, extra_args=extra, env=env
            )
            via_one = _client(one, owner.email, owner.api_key)
            via_two = _client(two, owner.email, owner.api_key)
            assert_ok(via_one.add_subscriptions([{"name": "scale"}]))

            # A message sent through one worker reaches a long-poll held by the other, both
            # ways round.
            for sender, poller_client, poller_server in (
                (via_one, via_two, two),
                (via_two, via_one, one),
            ):
                queue = assert_ok(sender.register(event_types=["message"]))
                poll = _Poll(poller_client, queue["queue_id"], queue["last_event_id"])
                _wait_for(partial(_is_waiting, poller_server, owner.email, owner.api_key))
                sent = assert_ok(
                    sender.send_message(
                        {"type": "stream", "to": "scale", "topic": "t", "content": "across"}
                    )
                )
                result = poll.join()
                assert result.get("result") == "success", (result, poll.error)
                assert list(_message_events(result["events"])) == [sent["id"]]

            # Kill worker two with SIGKILL while it holds a poll and serves senders.
            queue = assert_ok(via_two.register(event_types=["message"]))
            held = _Poll(
                _client(two, owner.email, owner.api_key), queue["queue_id"], queue["last_event_id"]
            )
            _wait_for(partial(_is_waiting, two, owner.email, owner.api_key))
            senders = _Senders(two, owner.email, owner.api_key, 4)
            senders.wait_for(20)
            os.kill(two.pid, signal.SIGKILL)
            two.process.wait(timeout=10)
            acknowledged = senders.finish()
            held.thread.join(timeout=10)
            assert acknowledged, "no message was acknowledged before the kill"

            # Every acknowledged message is stored, intact, and reads back through worker one;
            # the queue registered through the dead worker lives on and has every one of them.
            stored = _stored(via_one, "scale")
            missing = acknowledged.keys() - stored.keys()
            assert not missing, f"acknowledged but lost: {sorted(missing)}"
            assert all(stored[i] == content for i, content in acknowledged.items())
            events = _drain(via_one, queue["queue_id"], set(acknowledged))
            assert all(events[i]["content"] == acknowledged[i] for i in acknowledged)
            # No message exists that is not whole: every stored one is the sender's text.
            assert all(c.startswith("message ") or c == "across" for c in stored.values()), stored

            # A restarted worker serves the same queue.
            two = start_serve(
                tmp_path / "two", database_url=database_url, extra_args=extra, env=env
            )
            again = _client(two, owner.email, owner.api_key)
            after = assert_ok(
                via_one.send_message(
                    {"type": "stream", "to": "scale", "topic": "t", "content": "after restart"}
                )
            )
            assert after["id"] in _drain(again, queue["queue_id"], {after["id"]})
            for c in (via_one, via_two, again):
                close(c)
        finally:
            if two is not None and two.process.poll() is None:
                stop_serve(two)
            stop_serve(one)


def _worker_pids(pid: int) -> list[int]:
    """uvicorn's worker processes (multiprocessing's resource tracker is not one of them)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    pids = [int(p) for p in path.read_text().split()] if path.exists() else []
    workers = []
    for child in pids:
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"resource_tracker" not in cmdline:
            workers.append(child)
    return workers


def test_serve_workers_replaces_a_killed_worker(tmp_path: Path) -> None:
    """`serve --workers 2`: SIGKILL one worker mid-load; acknowledged messages and queues
    survive, the supervisor starts a new worker, and the service keeps answering."""
    with serving_workers(tmp_path / "data", "hubbub_workers_kill") as server:
        owner = server.owner()
        _wait_for(lambda: len(_worker_pids(server.pid)) == 2)
        first = _client(server, owner.email, owner.api_key)
        assert_ok(first.add_subscriptions([{"name": "scale"}]))
        queue = assert_ok(first.register(event_types=["message"]))

        senders = _Senders(server, owner.email, owner.api_key, 6)
        senders.wait_for(20)
        victim = _worker_pids(server.pid)[0]
        os.kill(victim, signal.SIGKILL)
        # uvicorn's supervisor notices the dead worker and starts another.
        _wait_for(lambda: victim not in _worker_pids(server.pid), timeout=30)
        _wait_for(lambda: len(_worker_pids(server.pid)) == 2, timeout=30)
        senders.wait_for(len(senders.acknowledged) + 20)
        acknowledged = senders.finish()

        reader = _client(server, owner.email, owner.api_key)
        stored = _stored(reader, "scale")
        missing = acknowledged.keys() - stored.keys()
        assert not missing, f"acknowledged but lost: {sorted(missing)}"
        assert all(stored[i] == content for i, content in acknowledged.items())
        events = _drain(reader, queue["queue_id"], set(acknowledged))
        assert all(events[i]["content"] == acknowledged[i] for i in acknowledged)
        close(first)
        close(reader)
    assert server.process.returncode == 0, server.stderr()[-3000:]


def test_rate_limit_is_shared_by_workers(tmp_path: Path) -> None:
    """One budget per user, whichever process counts the request (Redis sorted sets)."""
    with shared_backend("hubbub_workers_limit") as (database_url, env, extra):
        env = {**env, "HUBBUB_RATE_LIMIT": "6"}
        with serving(tmp_path / "one", database_url=database_url, extra_args=extra, env=env) as one:
            owner = one.owner()
            with serving(
                tmp_path / "two", database_url=database_url, extra_args=extra, env=env
            ) as two:
                auth = (owner.email, owner.api_key)
                statuses = [
                    httpx.get(f"{server.url}/api/v1/users/me", auth=auth, timeout=10).status_code
                    for server in (one, two, one, two, one, two, one, two)
                ]
                # serve's own start-up requests are not counted: six answers, then refusals
                # from both processes.
                assert statuses == [200] * 6 + [429, 429], statuses
