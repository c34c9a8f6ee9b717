"""What one HTTP request may make the server hold, and the answer to one refused.

uvicorn's httptools protocol accepts a request line and headers of any size and waits for
them, and for a body, for ever; none of its settings bounds them (``timeout_keep_alive``
covers only the idle time between requests, ``h11_max_incomplete_event_size`` only its h11
protocol, answered with a plain-text 400). ``http_protocol.py`` applies these limits in
the protocol. A request refused there is answered in JSON, in Zulip's error shape, as
every other answer is.
"""

from __future__ import annotations

import http
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from hubbub.settings import Settings

KIB = 1024
# Longest request line target (path and query) taken: nginx's default, which Zulip
# servers run behind, refuses one past 8 KiB; a long narrow in a query string fits.
MAX_URL_BYTES = 16 * KIB


@dataclass(frozen=True)
class HttpLimits:
    """What one request may cost before it is refused (``HUBBUB_HTTP_*`` settings)."""

    # The request line and headers together; the URL alone at most MAX_URL_BYTES.
    max_head_bytes: int = 64 * KIB
    # From a request's first byte (or the connection's opening) to its last header.
    header_timeout: float = 30.0
    # The longest pause in a body, while the server is ready to read it.
    body_timeout: float = 60.0

    @property
    def max_url_bytes(self) -> int:
        return min(MAX_URL_BYTES, self.max_head_bytes)


DEFAULT_LIMITS = HttpLimits()


def http_limits(settings: Settings) -> HttpLimits:
    return HttpLimits(
        max_head_bytes=settings.http_max_header_kib * KIB,
        header_timeout=settings.http_header_timeout_seconds,
        body_timeout=settings.http_body_timeout_seconds,
    )


class RequestRefused(Exception):
    """A request the protocol answers itself, with this status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def response(self, default_headers: list[tuple[bytes, bytes]]) -> bytes:
        """The whole HTTP response, which also closes the connection."""
        body = orjson.dumps({"result": "error", "msg": self.message, "code": "BAD_REQUEST"})
        phrase = http.HTTPStatus(self.status).phrase
        lines = [f"HTTP/1.1 {self.status} {phrase}".encode()]
        lines += [name + b": " + value for name, value in default_headers]
        lines += [
            b"content-type: application/json",
            b"content-length: " + str(len(body)).encode(),
            b"connection: close",
        ]
        return b"\r\n".join(lines) + b"\r\n\r\n" + body


def url_too_long(limits: HttpLimits) -> RequestRefused:
    return RequestRefused(414, f"Request URL too long (limit: {limits.max_url_bytes} bytes)")


def head_too_large(limits: HttpLimits) -> RequestRefused:
    return RequestRefused(431, f"Request headers too large (limit: {limits.max_head_bytes} bytes)")


def timed_out() -> RequestRefused:
    return RequestRefused(408, "Request timed out")


def invalid_request() -> RequestRefused:
    return RequestRefused(400, "Invalid HTTP request")
