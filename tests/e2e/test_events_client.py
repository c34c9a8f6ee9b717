"""Real-time events end to end: the official ``zulip`` client against ``hubbub serve``,
and two server processes sharing PostgreSQL and Redis."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
import zulip

from tests.e2e.conftest import (
    PG_ENV,
    HubbubServer,
    serving,
    serving_workers,
    shared_backend,
)
from tests.helpers import REDIS_ENV


def client_for(server: HubbubServer, email: str, api_key: str) -> zulip.Client:
    return zulip.Client(email=email, api_key=api_key, site=server.url, client="HubbubE2E")


def owner_client(server: HubbubServer) -> zulip.Client:
    owner = server.owner()
    return client_for(server, owner.email, owner.api_key)


def make_user(admin: zulip.Client, server: HubbubServer, name: str) -> zulip.Client:
    email = f"{name}@example.com"
    result = admin.create_user(
        {"email": email, "password": "long-enough-pw", "full_name": name.title()}
    )
    assert result["result"] == "success", result
    key = admin.call_endpoint(
        "fetch_api_key", method="POST", request={"username": email, "password": "long-enough-pw"}
    )
    assert key["result"] == "success", key
    return client_for(server, email, key["api_key"])


class Stop(Exception):
    """Raised from a callback to leave call_on_each_event's endless loop."""


def test_register_get_events_deregister(hubbub_server: HubbubServer) -> None:
    admin = owner_client(hubbub_server)
    queue = admin.register(event_types=["realm_user"])
    assert queue["result"] == "success", queue
    assert queue["last_event_id"] == -1
    assert any(p["email"] == hubbub_server.owner().email for p in queue["realm_users"])
    make_user(admin, hubbub_server, "ophelia")
    events = admin.get_events(queue_id=queue["queue_id"], last_event_id=-1)
    assert events["result"] == "success", events
    [event] = events["events"]
    assert event["type"] == "realm_user" and event["op"] == "add"
    assert event["person"]["full_name"] == "Ophelia"
    assert admin.deregister(queue["queue_id"])["result"] == "success"
    gone = admin.get_events(queue_id=queue["queue_id"], last_event_id=-1)
    assert gone["result"] == "error" and gone["code"] == "BAD_EVENT_QUEUE_ID"
    assert gone["queue_id"] == queue["queue_id"]


def test_call_on_each_event_sees_others_and_survives_deregister(
    hubbub_server: HubbubServer,
) -> None:
    admin = owner_client(hubbub_server)
    listener = make_user(admin, hubbub_server, "horatio")
    registered: list[str] = []
    real_register = listener.register

    def observed_register(*args: Any, **kwargs: Any) -> dict[str, Any]:
        result: dict[str, Any] = real_register(*args, **kwargs)
        if result.get("result") == "success":
            registered.append(result["queue_id"])
        return result

    listener.register = observed_register  # type: ignore[method-assign]
    seen: list[dict[str, Any]] = []
    failure: list[BaseException] = []

    def callback(event: dict[str, Any]) -> None:
        seen.append(event)
        if event["type"] == "realm_user" and event["person"].get("full_name") == "Renamed":
            raise Stop

    def run() -> None:
        try:
            listener.call_on_each_event(callback, event_types=["realm_user"])
        except Stop:
            pass
        except BaseException as exc:  # reported to the test thread below
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    _wait_for(lambda: len(registered) >= 1)
    # Deleting the queue under the client: its next poll gets BAD_EVENT_QUEUE_ID and the
    # client registers a new queue by itself.
    assert listener.deregister(registered[0])["result"] == "success"
    _wait_for(lambda: len(registered) >= 2)
    me = admin.get_profile()
    assert me["result"] == "success"
    target = next(m for m in admin.get_members()["members"] if m["full_name"] == "Horatio")
    # Another user's change reaches the listener's new queue.
    changed = admin.update_user_by_id(target["user_id"], full_name="Renamed")
    assert changed["result"] == "success", changed
    thread.join(timeout=20)
    assert not thread.is_alive(), "call_on_each_event never saw the rename"
    assert not failure, failure
    assert seen[-1]["person"] == {"user_id": target["user_id"], "full_name": "Renamed"}


def _wait_for(condition: Any, timeout: float = 15.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.mark.skipif(
    not (os.environ.get(REDIS_ENV) and os.environ.get(PG_ENV)),
    reason=f"two-process variant: set {PG_ENV} and {REDIS_ENV} to run it",
)
def test_event_from_one_process_reaches_a_poll_on_another(tmp_path: Path) -> None:
    """Two `hubbub serve` processes on one PostgreSQL database and one Redis: a queue
    registered through the first is polled through the second, and a change made through
    the first reaches that poll."""
    with (
        shared_backend("hubbub_two") as (database_url, env, extra),
        serving(tmp_path / "one", database_url=database_url, extra_args=extra, env=env) as one,
    ):
        owner = one.owner()
        with serving(tmp_path / "two", database_url=database_url, extra_args=extra, env=env) as two:
            through_one = client_for(one, owner.email, owner.api_key)
            through_two = client_for(two, owner.email, owner.api_key)
            queue = through_one.register(event_types=["realm_user"])
            assert queue["result"] == "success", queue
            result: dict[str, Any] = {}

            def poll() -> None:
                result.update(through_two.get_events(queue_id=queue["queue_id"], last_event_id=-1))

            poller = threading.Thread(target=poll, daemon=True)
            poller.start()
            _wait_for(lambda: _queue_polled(two, owner.email, owner.api_key))
            created = through_one.create_user(
                {
                    "email": "laertes@example.com",
                    "password": "long-enough-pw",
                    "full_name": "Laertes",
                }
            )
            assert created["result"] == "success", created
            poller.join(timeout=20)
            assert not poller.is_alive()
            assert result["result"] == "success", result
            [event] = result["events"]
            assert event["person"]["full_name"] == "Laertes"
            assert event["person"]["user_id"] == created["user_id"]


def _queue_polled(server: HubbubServer, email: str, api_key: str) -> bool:
    """Give the poll a moment to be waiting on the server (it cannot be observed directly)."""
    import time

    time.sleep(0.3)
    response = httpx.get(f"{server.url}/api/v1/users/me", auth=(email, api_key), timeout=5)
    return response.status_code == 200


@pytest.mark.skipif(
    not (os.environ.get(REDIS_ENV) and os.environ.get(PG_ENV)),
    reason=f"multi-worker variant: set {PG_ENV} and {REDIS_ENV} to run it",
)
def test_serve_with_two_workers_shares_queues(tmp_path: Path) -> None:
    """`serve --workers 2`: whichever worker takes each request, every poll of a queue
    registered anywhere sees the events; SIGTERM answers a waiting poll at once (not after
    the grace period, cancelled), stops the workers and exits 0."""

    with serving_workers(tmp_path / "data", "hubbub_workers") as srv:
        owner = srv.owner()
        for round_number in range(4):
            # A fresh client (a new connection) per step, so requests spread over workers.
            queue = client_for(srv, owner.email, owner.api_key).register(event_types=["realm_user"])
            assert queue["result"] == "success", queue
            name = f"Worker Test {round_number}"
            created = client_for(srv, owner.email, owner.api_key).create_user(
                {
                    "email": f"w{round_number}@example.com",
                    "password": "long-enough-pw",
                    "full_name": name,
                }
            )
            assert created["result"] == "success", created
            events = client_for(srv, owner.email, owner.api_key).get_events(
                queue_id=queue["queue_id"], last_event_id=-1
            )
            assert events["result"] == "success", events
            assert [e["person"]["full_name"] for e in events["events"]] == [name]
        # Two workers (multiprocessing may add its resource-tracker process).
        children = _child_pids(srv.pid)
        assert len(children) >= 2, children
        _stop_while_polling(srv, client_for(srv, owner.email, owner.api_key))
        assert "Exception in ASGI application" not in srv.stderr()
    assert srv.process.returncode == 0
    assert not any(_alive(pid) for pid in children)


def _stop_while_polling(server: HubbubServer, client: zulip.Client) -> str:
    """SIGTERM while ``client`` waits in a long-poll: the poll is answered at once with no
    events (not cut after the grace period) and the server exits 0; the queue's id."""
    import time

    from tests.e2e.conftest import stop_serve

    queue = client.register(event_types=["realm_user"])
    result: dict[str, Any] = {}

    def poll() -> None:
        result.update(client.get_events(queue_id=queue["queue_id"], last_event_id=-1))

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    time.sleep(0.5)
    started = time.monotonic()
    assert stop_serve(server) == 0
    elapsed = time.monotonic() - started
    poller.join(timeout=5)
    assert result.get("result") == "success" and result["events"] == [], result
    assert elapsed < 4, f"shutdown took {elapsed:.1f}s"
    return str(queue["queue_id"])


def _child_pids(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and " Z " not in Path(f"/proc/{pid}/stat").read_text()


def test_shutdown_answers_waiting_polls_and_keeps_queues(tmp_path: Path) -> None:
    """SIGTERM answers a waiting long-poll at once (not after the grace period) and the
    queue is still there after the restart."""
    from tests.e2e.conftest import start_serve, stop_serve

    server = start_serve(tmp_path / "data")
    try:
        owner = server.owner()
        queue_id = _stop_while_polling(server, client_for(server, owner.email, owner.api_key))
        assert "Cancel" not in server.stderr()
    finally:
        stop_serve(server)
    restarted = start_serve(tmp_path / "data")
    try:
        again = client_for(restarted, owner.email, owner.api_key)
        events = again.get_events(queue_id=queue_id, last_event_id=-1, dont_block=True)
        assert events["result"] == "success", events
    finally:
        assert stop_serve(restarted) == 0
