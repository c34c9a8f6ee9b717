"""``create_app(settings)``: the ASGI application, its services and their lifetime."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from hubbub.api.avatar import avatar_routes
from hubbub.api.body_limit import BodySizeLimit, upload_limit
from hubbub.api.direct import DirectApi
from hubbub.api.emoji_files import emoji_routes
from hubbub.api.headers import header
from hubbub.api.openapi_doc import openapi_routes
from hubbub.api.responses import json_error
from hubbub.api.routes import build_router
from hubbub.api.tus_routes import tus_routes
from hubbub.api.uploads import upload_routes
from hubbub.api.urls import served_host
from hubbub.errors import (
    ApiError,
    InternalServerError,
    InvalidSubdomainError,
    MethodNotAllowedError,
    NotFoundError,
)
from hubbub.services import Services, build_services
from hubbub.settings import Settings
from hubbub.uploads import configure_uploads
from hubbub.workers.periodic import start_background_jobs

logger = logging.getLogger("hubbub")


async def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    error: ApiError
    if exc.status_code == 404:
        error = NotFoundError()
    elif exc.status_code == 405:
        error = MethodNotAllowedError([])
    else:
        error = InternalServerError()
    return json_error(error)


async def _server_error(request: Request, exc: Exception) -> Response:
    logger.error("Internal server error on %s %s", request.method, request.url.path, exc_info=exc)
    return json_error(InternalServerError())


class HubbubApp(Starlette):
    """Starlette, with the API's requests taken before its middleware (``api/direct.py``).

    ``__call__`` is a plain function that returns the coroutine which answers the
    request, not a coroutine of its own: a waiting long-poll holds every frame of its
    chain for up to a minute, so one frame fewer is memory saved for every idle client
    (``bench/longpoll.py`` measures it against the idle-poll budget). uvicorn therefore
    runs it with ``interface="asgi3"`` (``server.uvicorn_options``): its
    "auto" takes an application whose ``__call__`` is no coroutine function for ASGI 2.
    """

    api: DirectApi
    settings: Settings
    # Host names whose refusal was logged, so that a client repeating one adds no lines.
    refused_hosts: set[str]

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Coroutine[Any, Any, None]:
        if scope["type"] == "http" and not served_host(header(scope, b"host") or "", self.settings):
            return _refuse_host(self.refused_hosts, scope, receive, send)
        found = self.api.find(scope)
        if found is not None:
            scope["app"] = self
            return self.api.serve(scope, receive, send, found)
        return super().__call__(scope, receive, send)


_MAX_REFUSED_HOSTS_LOGGED = 100


async def _refuse_host(logged: set[str], scope: Scope, receive: Receive, send: Send) -> None:
    """Answer a request for a name this server does not serve as for an unknown realm."""
    host = header(scope, b"host") or ""
    if host not in logged and len(logged) < _MAX_REFUSED_HOSTS_LOGGED:
        logged.add(host)
        logger.warning(
            "refused a request for host %r: neither HUBBUB_EXTERNAL_HOST, one of its "
            "subdomains nor a local name (docs/configuration.md)",
            host,
        )
    await json_error(InvalidSubdomainError())(scope, receive, send)


def create_app(settings: Settings, *, services: Services | None = None) -> Starlette:
    """The application; ``services`` lets tests inject their own (a fake clock, say)."""
    services = services or build_services(settings)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        await services.start()
        jobs = start_background_jobs(services)
        try:
            yield {}
        finally:
            for job in jobs:
                job.cancel()
            await asyncio.gather(*jobs, return_exceptions=True)
            await services.close()

    # Uploads: the file store of this process.
    configure_uploads(settings)
    app = HubbubApp(
        # File downloads live at the site's root (/user_uploads/...), not under /api/v1.
        routes=[
            *openapi_routes(),
            *upload_routes(),
            *tus_routes(),
            *emoji_routes(),
            *avatar_routes(),
        ],
        exception_handlers={HTTPException: _http_exception, Exception: _server_error},
        middleware=[
            Middleware(BodySizeLimit, max_upload_mib=settings.max_file_upload_mib),
        ],
        lifespan=lifespan,
    )
    app.settings = settings
    app.refused_hosts = set()
    app.api = DirectApi(build_router(), upload_limit(settings.max_file_upload_mib))
    app.state.services = services
    return app
