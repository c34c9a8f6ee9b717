"""The tus upload routes (``api/tus.py``), whose handlers are imported on the first tus
request: an idle server that never receives one does not hold the protocol's code."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

Handler = Callable[[Request], Awaitable[Response]]


def _on_first_use(name: str) -> Handler:
    async def handle(request: Request) -> Response:
        from hubbub.api import tus

        handler: Handler = getattr(tus, name)
        return await handler(request)

    return handle


def tus_routes() -> list[BaseRoute]:
    """The tus routes, mounted by ``create_app`` beside the download routes (they answer
    tus's status codes and headers, not the API's JSON envelope)."""
    return [
        Route("/api/v1/tus", _on_first_use("tus_options"), methods=["OPTIONS"]),
        Route("/api/v1/tus", _on_first_use("tus_create"), methods=["POST"]),
        Route("/api/v1/tus/{upload_id}", _on_first_use("tus_options"), methods=["OPTIONS"]),
        Route("/api/v1/tus/{upload_id}", _on_first_use("tus_head"), methods=["HEAD"]),
        Route("/api/v1/tus/{upload_id}", _on_first_use("tus_patch"), methods=["PATCH"]),
        Route("/api/v1/tus/{upload_id}", _on_first_use("tus_delete"), methods=["DELETE"]),
    ]
