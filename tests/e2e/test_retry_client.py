"""The official client's retries: it re-sends a request after a 5xx or a dropped
connection (up to ten times). A proxy between it and ``hubbub serve`` lets the first
``POST /messages`` reach the server and then loses the answer; with ``queue_id`` and
``local_id`` in the request the retry returns the same message, and only one exists."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import zulip

from tests.e2e.client import assert_ok, close
from tests.e2e.conftest import HubbubServer

BAD_GATEWAY = (
    b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n"
    b"Connection: close\r\n\r\nBad Gateway"
)


def _read_message(sock: socket.socket, buffer: bytearray) -> bytes | None:
    """One HTTP/1.1 message with a Content-Length body (all this test needs), or None."""
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buffer += chunk
    head, _, _ = bytes(buffer).partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    total = len(head) + 4 + length
    while len(buffer) < total:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buffer += chunk
    message = bytes(buffer[:total])
    del buffer[:total]
    return message


class LossyProxy:
    """Forwards requests; answers the first ``POST /api/v1/messages`` with ``failure``
    ("drop": close the connection; "502": a gateway error) after the server has handled it."""

    def __init__(self, upstream_port: int, failure: str) -> None:
        self.upstream_port = upstream_port
        self.failure = failure
        self.failed = 0
        self.sends_forwarded = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        from_client, from_upstream = bytearray(), bytearray()
        try:
            while True:
                request = _read_message(client, from_client)
                if request is None:
                    return
                upstream.sendall(request)
                response = _read_message(upstream, from_upstream)
                if response is None:
                    return
                if request.startswith(b"POST /api/v1/messages "):
                    self.sends_forwarded += 1
                    if self.failed == 0:
                        self.failed += 1
                        if self.failure == "502":
                            client.sendall(BAD_GATEWAY)
                        return  # the answer is lost; the connection closes
                client.sendall(response)
        except OSError:
            return
        finally:
            client.close()
            upstream.close()

    def close(self) -> None:
        self.listener.close()


@pytest.fixture(params=["drop", "502"])
def proxy(request: pytest.FixtureRequest, hubbub_server: HubbubServer) -> Iterator[LossyProxy]:
    lossy = LossyProxy(hubbub_server.port, request.param)
    yield lossy
    lossy.close()


def test_a_lost_answer_is_retried_without_a_duplicate(
    hubbub_server: HubbubServer, proxy: LossyProxy, tmp_path: Path
) -> None:
    owner = hubbub_server.owner()
    direct = zulip.Client(
        email=owner.email, api_key=owner.api_key, site=hubbub_server.url, retry_on_errors=False
    )
    # The official client, retrying as it does by default, through the proxy.
    client = zulip.Client(
        email=owner.email, api_key=owner.api_key, site=f"http://127.0.0.1:{proxy.port}"
    )
    try:
        assert_ok(direct.add_subscriptions([{"name": "retries"}]))
        assert_ok(client.get_profile())  # the client retries only after a first connection
        queue = assert_ok(client.register(event_types=["message"]))
        sent = assert_ok(
            client.send_message(
                {
                    "type": "stream",
                    "to": "retries",
                    "topic": "once",
                    "content": "exactly once",
                    "queue_id": queue["queue_id"],
                    "local_id": "1.01",
                }
            )
        )
        assert proxy.failed == 1 and proxy.sends_forwarded == 2
        stored = assert_ok(
            direct.get_messages(
                {
                    "anchor": "newest",
                    "num_before": 10,
                    "num_after": 0,
                    "narrow": [{"operator": "stream", "operand": "retries"}],
                }
            )
        )["messages"]
        assert [m["id"] for m in stored] == [sent["id"]]
        # The queue got the message once, with the local id the client echoes.
        events = assert_ok(
            direct.get_events(queue_id=queue["queue_id"], last_event_id=-1, dont_block=True)
        )["events"]
        messages = [e for e in events if e["type"] == "message"]
        assert [(e["message"]["id"], e.get("local_message_id")) for e in messages] == [
            (sent["id"], "1.01")
        ]
    finally:
        close(client)
        close(direct)
