"""A fake Zulip push notification bouncer: a real HTTP server in a thread, on a free port.

It records every request (path, Basic credentials, form or JSON body) and answers like
the bouncer's ``/api/v1/remotes/push/...`` endpoints; a test can queue other answers
(``fail_next``) or mark tokens unknown to it (``unknown_tokens``).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

from hubbub.settings import Settings

ORG_ID = "5a1f1cbc-9a1c-4f7e-9d0c-3f2a4b6c8d10"
ORG_KEY = "k" * 64
# 48 characters: valid base64, as Zulip requires of APNs tokens.
APNS_TOKEN = "c0ffee" * 8


@dataclass
class Received:
    path: str
    credentials: tuple[str, str]
    content_type: str
    body: dict[str, Any]
    user_agent: str


@dataclass
class FakeBouncer:
    url: str = ""
    received: list[Received] = field(default_factory=list)
    # Answers to use, in order, before the normal ones: (status, JSON body).
    fail_next: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    unknown_tokens: set[str] = field(default_factory=set)
    # Tokens the next notify reports as deleted (``deleted_devices``).
    dead_tokens: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def calls(self, endpoint: str) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.path == "/api/v1/remotes/" + endpoint]

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            if self.fail_next:
                return self.fail_next.pop(0)
        if path.endswith("/push/test_notification") and body.get("token") in self.unknown_tokens:
            return 400, {
                "result": "error",
                "msg": "Device not recognized by the push bouncer",
                "code": "INVALID_REMOTE_PUSH_DEVICE_TOKEN",
            }
        if path.endswith("/push/unregister") and body.get("token") in self.unknown_tokens:
            return 400, {"result": "error", "msg": "Token does not exist", "code": "BAD_REQUEST"}
        if path.endswith("/push/notify"):
            android = [t for t in body.get("android_devices", []) if t in self.dead_tokens]
            apple = [t for t in body.get("apple_devices", []) if t in self.dead_tokens]
            return 200, {
                "result": "success",
                "msg": "",
                "total_android_devices": len(body.get("android_devices", [])),
                "total_apple_devices": len(body.get("apple_devices", [])),
                "deleted_devices": {"android_devices": android, "apple_devices": apple},
            }
        return 200, {"result": "success", "msg": ""}


def _handler(bouncer: FakeBouncer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            content_type = self.headers.get("Content-Type", "")
            if content_type.startswith("application/json"):
                body = json.loads(raw)
            else:
                body = dict(parse_qsl(raw))
            auth = self.headers.get("Authorization", "")
            user, _, password = (
                base64.b64decode(auth.removeprefix("Basic ")).decode().partition(":")
            )
            with bouncer.lock:
                bouncer.received.append(
                    Received(
                        self.path,
                        (user, password),
                        content_type,
                        body,
                        self.headers.get("User-Agent", ""),
                    )
                )
            status, answer = bouncer.answer(self.path, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def running_bouncer() -> Iterator[FakeBouncer]:
    bouncer = FakeBouncer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(bouncer))
    bouncer.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield bouncer
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    """Poll ``predicate`` until true (end-to-end tests, where a real server works)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the fake bouncer")
        time.sleep(0.05)


def with_bouncer(settings: Settings, bouncer: FakeBouncer) -> Settings:
    """``settings`` with push configured to use the fake bouncer."""
    return settings.with_(
        push_bouncer_url=bouncer.url, push_bouncer_org_id=ORG_ID, push_bouncer_org_key=ORG_KEY
    )
