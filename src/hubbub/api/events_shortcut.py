"""The long-poll's own way in: ``GET /api/v1/events`` ahead of Starlette's whole stack.

Every client re-arms its long-poll after each batch of events, and each poll then waits,
up to a minute, holding whatever the request's path through the application allocated.
The application (``app.HubbubApp``) hands such a request here before Starlette's
middleware, router and route, whose frames a waiting poll would otherwise hold (with the
shared heartbeat alarm of ``events/alarms.py``: 12.1 -> 11.2 MB per 1,000 idle polls), and
whose work every re-arm would repeat. It is still answered by ``dispatch``, so
authentication, rate limits, parameters and errors (an unexpected one logged and answered
with a JSON 500 by ``dispatch`` itself) are those of every endpoint.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from hubbub.api.endpoint import ENDPOINTS, dispatch

EVENTS_PATH = "/api/v1/events"


class EventsShortcut:
    def __init__(self) -> None:
        # The endpoint modules are imported (registered) by the route table first.
        self.endpoint = next(ep for ep in ENDPOINTS if (ep.method, ep.path) == ("GET", "/events"))

    @staticmethod
    def takes(scope: Scope) -> bool:
        return (
            scope["type"] == "http"
            and scope["method"] == "GET"
            and scope["path"] == EVENTS_PATH
            and not _has_body(scope)
        )

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        args: dict[str, str] = {}
        for key, value in parse_qsl(scope["query_string"].decode("latin-1"), True):
            args.setdefault(key, value)  # the first value wins, as in read_arguments
        # dispatch answers every error itself (an unexpected one logged, as a JSON 500).
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
