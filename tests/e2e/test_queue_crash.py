"""Event queues survive a crash on SQLite (events/durable_queues.py): the official client's
``call_on_each_event`` keeps its queue across a SIGKILL and a restart, and sees every
message sent before, during and after, each once, without registering again."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import zulip

from tests.e2e.conftest import HubbubServer, start_serve, stop_serve


class Stop(Exception):
    """Raised from the callback to leave call_on_each_event's endless loop."""


def _send_until_stopped(
    url: str, auth: tuple[str, str], stop: threading.Event, acknowledged: list[int]
) -> None:
    with httpx.Client(base_url=url, auth=auth, timeout=10) as client:
        number = 0
        while not stop.is_set():
            number += 1
            try:
                response = client.post(
                    "/api/v1/messages",
                    data={"type": "stream", "to": "crash", "topic": "t", "content": f"#{number}"},
                )
            except httpx.HTTPError:  # killed mid-request: never acknowledged
                time.sleep(0.05)
                continue
            if response.status_code == 200:
                acknowledged.append(response.json()["id"])


def _wait_for(condition: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not in time"
        time.sleep(0.05)


def test_call_on_each_event_misses_nothing_across_a_sigkill(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    server: HubbubServer = start_serve(data_dir, log_dir=tmp_path / "logs")
    try:
        owner = server.owner()
        with httpx.Client(base_url=server.url, auth=(owner.email, owner.api_key)) as admin:
            made = admin.post(
                "/api/v1/users",
                data={"email": "s@example.com", "password": "long password", "full_name": "Sender"},
            )
            assert made.status_code == 200, made.text
            subscribed = admin.post(
                "/api/v1/users/me/subscriptions",
                data={
                    "subscriptions": '[{"name": "crash"}]',
                    "principals": f'["{owner.email}", "s@example.com"]',
                },
            )
            assert subscribed.status_code == 200, subscribed.text
        key = httpx.post(
            f"{server.url}/api/v1/fetch_api_key",
            data={"username": "s@example.com", "password": "long password"},
        ).json()["api_key"]
        sender = ("s@example.com", key)

        listener = zulip.Client(
            email=owner.email, api_key=owner.api_key, site=server.url, client="HubbubE2E"
        )
        registrations: list[str] = []
        register = listener.register

        def counting_register(*args: Any, **kwargs: Any) -> dict[str, Any]:
            result: dict[str, Any] = register(*args, **kwargs)
            registrations.append(result.get("queue_id", ""))
            return result

        listener.register = counting_register  # type: ignore[method-assign]
        seen: list[int] = []

        def on_event(event: dict[str, Any]) -> None:
            if event["message"]["content"] == "stop":
                raise Stop()
            seen.append(event["message"]["id"])

        def listen() -> None:
            with contextlib.suppress(Stop):
                listener.call_on_each_event(on_event, event_types=["message"])

        thread = threading.Thread(target=listen, daemon=True)
        thread.start()
        _wait_for(lambda: registrations, "the listener registered")

        stop = threading.Event()
        acknowledged: list[int] = []
        sending = threading.Thread(
            target=_send_until_stopped, args=(server.url, sender, stop, acknowledged), daemon=True
        )
        sending.start()
        _wait_for(lambda: len(acknowledged) >= 30 and len(seen) >= 10, "sends before the kill")
        os.kill(server.pid, signal.SIGKILL)
        server.process.wait(timeout=10)
        stop.set()
        sending.join(timeout=30)

        server = start_serve(data_dir, log_dir=tmp_path / "logs")
        # The client's polls fail while the server is down; it polls the same queue again,
        # now at the restarted server's address.
        listener.base_url = f"{server.url}/api/"
        stop.clear()
        sending = threading.Thread(
            target=_send_until_stopped, args=(server.url, sender, stop, acknowledged), daemon=True
        )
        before_restart = len(acknowledged)
        sending.start()
        _wait_for(lambda: len(acknowledged) >= before_restart + 10, "sends after the restart")
        stop.set()
        sending.join(timeout=30)
        _wait_for(lambda: set(acknowledged) <= set(seen), "every acknowledged message seen")
        with httpx.Client(base_url=server.url, auth=sender) as client:
            assert client.post(
                "/api/v1/messages",
                data={"type": "stream", "to": "crash", "topic": "t", "content": "stop"},
            ).is_success
        thread.join(timeout=30)
        assert not thread.is_alive()

        assert len(registrations) == 1, f"registered again: {registrations}"
        assert len(seen) == len(set(seen)), "a message was delivered twice"
        missed = sorted(set(acknowledged) - set(seen))
        assert not missed, f"{len(missed)} of {len(acknowledged)} missed: {missed[:20]}"
    finally:
        stop_serve(server)
