"""The API's own way in: every request under ``/api/v1`` ahead of Starlette's stack.

The application (``app.HubbubApp``) hands a request whose path names an endpoint here,
before Starlette's middleware (error handlers, the body limit), router and route: their
wrappers cost every request CPU (more for a template late in the route list) for
nothing ``dispatch`` does not do itself, since it answers every error itself
(an unexpected one logged, as a JSON 500). Here the path is found by ``ApiRouter``
(a dictionary for literal paths), the body limit applied (``api/body_limit.py``), and the
request given to ``dispatch``. Other paths (file downloads, the API document, unknown
paths for a JSON 404) still go to Starlette.

A request without a body (most are GETs) has its arguments read from the query string
here, which is all ``read_arguments`` would read. That matters most to the long-poll:
every idle client re-arms it after each batch of events, and each then waits, up to a
minute, holding whatever the request's way in allocated (as with the shared heartbeat
alarm of ``events/alarms.py``).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from hubbub.api.body_limit import limit_body
from hubbub.api.endpoint import Endpoint, dispatch, read_query
from hubbub.api.responses import json_error
from hubbub.api.routes import ApiRoute, ApiRouter
from hubbub.errors import ApiError, RequestTooLargeError


class DirectApi:
    def __init__(self, router: ApiRouter, upload_limit: int) -> None:
        self.router = router
        self.upload_limit = upload_limit

    def find(self, scope: Scope) -> tuple[ApiRoute, dict[str, Any]] | None:
        """The route of an HTTP request to an API path (and its path parameters), or None
        for Starlette's stack."""
        if scope["type"] != "http":
            return None
        return self.router.match(_route_path(scope))

    async def serve(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        found: tuple[ApiRoute, dict[str, Any]],
    ) -> None:
        route, path_params = found
        scope["path_params"] = path_params
        try:
            ep: Endpoint = route.endpoint_for(scope["method"])
        except ApiError as error:
            await json_error(error)(scope, receive, send)
            return
        args: dict[str, str] | None = None
        if not _has_body(scope):
            # Only the query string to read (as ``read_arguments`` would): most requests
            # are such GETs, a long-poll's re-arm above all.
            args = {}
            read_query(scope, args)
        else:
            limited = limit_body(scope, receive, self.upload_limit)
            if isinstance(limited, RequestTooLargeError):
                await json_error(limited)(scope, receive, send)
                return
            receive = limited
        response = await dispatch(Request(scope, receive), ep, args)
        await response(scope, receive, send)


def _route_path(scope: Scope) -> str:
    """The path without the ``root_path`` a proxy's prefix may add, as Starlette routes."""
    path: str = scope["path"]
    root_path: str = scope.get("root_path", "")
    if (
        root_path
        and path.startswith(root_path)
        and path[len(root_path) : len(root_path) + 1] == "/"
    ):
        return path[len(root_path) :]
    return path


def _has_body(scope: Scope) -> bool:
    """Arguments may come in a form body even on GET; those requests read it."""
    for name, value in scope["headers"]:
        if name == b"content-type" or (name == b"content-length" and value.strip() != b"0"):
            return True
        if name == b"transfer-encoding":
            return True
    return False
