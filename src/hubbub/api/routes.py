"""The route table: every endpoint under /api/v1, grouped by path for 405 answers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from starlette.convertors import Convertor
from starlette.routing import compile_path

# Importing the endpoint modules registers their operations.
from hubbub.api import (  # noqa: F401
    alert_words,
    bot_storage,
    drafts,
    events,
    export,
    linkifiers,
    message_delete,
    message_edit,
    message_fetch,
    message_flags,
    messages,
    muted_users,
    playgrounds,
    presence,
    profile_fields,
    push,
    reactions,
    realm,
    realm_emoji,
    saved_snippets,
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
    webhooks,
)
from hubbub.api.endpoint import ENDPOINTS, Endpoint
from hubbub.errors import MethodNotAllowedError

API_PREFIX = "/api/v1"


@dataclass(frozen=True)
class ApiRoute:
    """One path's endpoints, by method."""

    by_method: dict[str, Endpoint]

    def endpoint_for(self, method: str) -> Endpoint:
        ep = self.by_method.get(method)
        if ep is None and method == "HEAD":
            ep = self.by_method.get("GET")
        if ep is None:
            # Zulip lists HEAD wherever GET is served.
            head = ["HEAD"] if "GET" in self.by_method else []
            raise MethodNotAllowedError(sorted(self.by_method) + head)
        return ep


@dataclass(frozen=True)
class _Template:
    pattern: re.Pattern[str]
    convertors: dict[str, Convertor[Any]]
    route: ApiRoute


class ApiRouter:
    """Finds the endpoints of a path under /api/v1: a dictionary for literal paths (most
    requests), then the templates in turn (``/messages/{message_id}``), their parameters
    converted by Starlette's own convertors. Starlette's router tried every route's
    regular expression in turn, costly for a template late in the list, and its
    middleware and route wrappers cost as much again (``api/direct.py``)."""

    def __init__(self, endpoints: list[Endpoint]) -> None:
        grouped: dict[str, dict[str, Endpoint]] = {}
        for ep in endpoints:
            grouped.setdefault(ep.path, {})[ep.method] = ep
        self.literal: dict[str, ApiRoute] = {}
        self.templates: list[_Template] = []
        # Literal paths ("/users/me") win over templates ("/users/{email}"); templates
        # with fewer parameters first.
        for path in sorted(grouped, key=lambda p: p.count("{")):
            route = ApiRoute(grouped[path])
            if "{" not in path:
                self.literal[API_PREFIX + path] = route
                continue
            pattern, _format, convertors = compile_path(API_PREFIX + path)
            self.templates.append(_Template(pattern, convertors, route))

    def match(self, path: str) -> tuple[ApiRoute, dict[str, Any]] | None:
        """The route of ``path`` and its path parameters, or None."""
        route = self.literal.get(path)
        if route is not None:
            return route, {}
        if not path.startswith(API_PREFIX):
            return None
        for template in self.templates:
            found = template.pattern.match(path)
            if found is not None:
                params = {
                    name: template.convertors[name].convert(value)
                    for name, value in found.groupdict().items()
                }
                return template.route, params
        return None


def build_router() -> ApiRouter:
    return ApiRouter(ENDPOINTS)
