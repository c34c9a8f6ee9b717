"""A user made by ``hubbub create-user`` beside a running ``hubbub serve`` reaches the
official client's open event queue (through the event outbox), people and bots alike,
and on the server with several workers too."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
import zulip

from tests.e2e.client import assert_ok, close, make_client
from tests.e2e.conftest import (
    PG_ENV,
    HubbubServer,
    run_hubbub,
    serving_workers,
)
from tests.helpers import REDIS_ENV

# The outbox is read twice a second; the command's own start-up comes before that.
ARRIVAL_SECONDS = 10.0


def _create_user(server: HubbubServer, cwd: Path, *args: str) -> dict[str, Any]:
    done = run_hubbub("create-user", "--realm", "", *args, "--json", *server.db_args(), cwd=cwd)
    assert done.returncode == 0, done.stderr
    created: dict[str, Any] = orjson.loads(done.stdout)
    return created


def _events_until(
    client: zulip.Client, queue_id: str, wanted: int, timeout: float = ARRIVAL_SECONDS
) -> list[dict[str, Any]]:
    """The queue's events (heartbeats left out) once ``wanted`` have arrived."""
    deadline = time.monotonic() + timeout
    events: list[dict[str, Any]] = []
    last = -1
    while len(events) < wanted:
        assert time.monotonic() < deadline, f"only {events} arrived in {timeout} s"
        got = assert_ok(client.get_events(queue_id=queue_id, last_event_id=last))["events"]
        for event in got:
            last = max(last, event["id"])
            if event["type"] != "heartbeat":
                events.append(event)
    return events


def _check_arrivals(server: HubbubServer, tmp_path: Path) -> None:
    owner = server.owner()
    client = make_client(email=owner.email, api_key=owner.api_key, site=server.url)
    try:
        queue = assert_ok(client.register(event_types=["realm_user"]))
        started = time.monotonic()
        person = _create_user(server, tmp_path, "--email", "c@x.com", "--full-name", "C D")
        [added] = _events_until(client, queue["queue_id"], 1)
        assert (added["type"], added["op"]) == ("realm_user", "add")
        assert added["person"]["user_id"] == person["user_id"]
        assert added["person"]["email"] == "c@x.com"
        assert added["person"]["full_name"] == "C D"
        assert time.monotonic() - started < ARRIVAL_SECONDS

        bot = _create_user(
            server, tmp_path, "--email", "robot-bot@x.com", "--full-name", "Robot", "--bot"
        )
        events = _events_until(client, queue["queue_id"], 2)
        assert [e["person"]["user_id"] for e in events] == [person["user_id"], bot["user_id"]]
        assert events[1]["person"]["is_bot"] is True
        # Each once: nothing more comes.
        time.sleep(1.5)
        more = assert_ok(
            client.get_events(
                queue_id=queue["queue_id"], last_event_id=events[-1]["id"], dont_block=True
            )
        )["events"]
        assert [e for e in more if e["type"] != "heartbeat"] == []
    finally:
        close(client)


def test_created_users_reach_open_queues(hubbub_server: HubbubServer, tmp_path: Path) -> None:
    _check_arrivals(hubbub_server, tmp_path)


@pytest.mark.skipif(
    not (os.environ.get(REDIS_ENV) and os.environ.get(PG_ENV)),
    reason=f"several workers: set {PG_ENV} and {REDIS_ENV} to run it",
)
def test_created_users_reach_open_queues_with_workers(tmp_path: Path) -> None:
    with serving_workers(tmp_path / "data", "hubbub_outbox") as server:
        _check_arrivals(server, tmp_path)
