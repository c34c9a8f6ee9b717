"""The route table: every endpoint under /api/v1, grouped by path for 405 answers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

# Importing the endpoint modules registers their operations.
from hubbub.api import (  # noqa: F401
    alert_words,
    drafts,
    events,
    linkifiers,
    message_delete,
    message_edit,
    message_fetch,
    message_flags,
    messages,
    muted_users,
    presence,
    profile_fields,
    push,
    reactions,
    realm,
    scheduled_messages,
    server,
    settings,
    stream_settings,
    streams,
    subscriptions,
    typing,
    uploads,
    user_groups,
    user_topics,
    users,
)
from hubbub.api.endpoint import ENDPOINTS, Endpoint, dispatch
from hubbub.api.responses import json_error
from hubbub.errors import MethodNotAllowedError

API_PREFIX = "/api/v1"
_ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def _path_handler(by_method: dict[str, Endpoint]) -> Callable[[Request], Awaitable[Response]]:
    # Zulip lists HEAD wherever GET is served.
    allowed = sorted(by_method) + (["HEAD"] if "GET" in by_method else [])

    async def handle(request: Request) -> Response:
        ep = by_method.get(request.method)
        if ep is None and request.method == "HEAD":
            ep = by_method.get("GET")
        if ep is None:
            return json_error(MethodNotAllowedError(allowed))
        return await dispatch(request, ep)

    return handle


def build_routes() -> list[BaseRoute]:
    grouped: dict[str, dict[str, Endpoint]] = {}
    for ep in ENDPOINTS:
        grouped.setdefault(ep.path, {})[ep.method] = ep
    # Literal paths ("/users/me") must win over templates ("/users/{email}").
    paths = sorted(grouped, key=lambda p: p.count("{"))
    return [
        Route(API_PREFIX + path, _path_handler(grouped[path]), methods=_ALL_METHODS)
        for path in paths
    ]
