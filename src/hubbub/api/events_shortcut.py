"""The long-poll's own way in: ``GET /api/v1/events`` without Starlette's routing.

Every client re-arms its long-poll after each batch of events, and each poll then waits,
up to a minute, holding whatever the request's path through the application allocated.
Served here, a poll skips the router, the route and the exception middleware (about 5 KB
per waiting poll, and their work on every re-arm); it is still answered by ``dispatch``,
so authentication, rate limits, parameters and errors are those of every endpoint.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from hubbub.api.endpoint import ENDPOINTS, dispatch

EVENTS_PATH = "/api/v1/events"


class EventsShortcut:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        # The endpoint modules are imported (registered) by the route table first.
        self.endpoint = next(ep for ep in ENDPOINTS if (ep.method, ep.path) == ("GET", "/events"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "GET"
            or scope["path"] != EVENTS_PATH
            or _has_body(scope)
        ):
            await self.app(scope, receive, send)
            return
        args: dict[str, str] = {}
        for key, value in parse_qsl(scope["query_string"].decode("latin-1"), True):
            args.setdefault(key, value)  # the first value wins, as in read_arguments
        response = await dispatch(Request(scope, receive), self.endpoint, args)
        await response(scope, receive, send)


def _has_body(scope: Scope) -> bool:
    """Arguments may come in a form body even on GET; those requests take the usual way."""
    for name, value in scope["headers"]:
        if name == b"content-type" or (name == b"content-length" and value.strip() != b"0"):
            return True
        if name == b"transfer-encoding":
            return True
    return False
