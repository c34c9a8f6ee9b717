"""A bound on request bodies, checked as they arrive.

uvicorn and Starlette read any body they are sent; the multipart parser would spool a
10 GB upload to disk before the upload endpoint could refuse it. This ASGI middleware
refuses a declared ``Content-Length`` over the limit before the application runs, and stops
a body without one (chunked) as soon as it passes the limit. Uploads may be as large as
the configured upload size plus room for the multipart framing; every other request is
form fields, for which ``MAX_BODY_BYTES`` is far more than any client sends.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hubbub.api.headers import header
from hubbub.api.responses import json_error
from hubbub.errors import RequestTooLargeError

MIB = 1024 * 1024
MAX_BODY_BYTES = 10 * MIB
UPLOAD_PATHS = frozenset({"/api/v1/user_uploads"})
MULTIPART_ALLOWANCE = MIB


class BodySizeLimit:
    """The bound as middleware, for the routes Starlette serves (file downloads, the API
    document); the API's own requests apply it in ``api/direct.py``."""

    def __init__(self, app: ASGIApp, *, max_upload_mib: int) -> None:
        self.app = app
        self.upload_limit = upload_limit(max_upload_mib)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limited = limit_body(scope, receive, self.upload_limit)
        if isinstance(limited, RequestTooLargeError):
            await json_error(limited)(scope, receive, send)
            return
        await self.app(scope, limited, send)


def upload_limit(max_upload_mib: int) -> int:
    return max_upload_mib * MIB + MULTIPART_ALLOWANCE


def limit_body(scope: Scope, receive: Receive, upload_limit: int) -> Receive | RequestTooLargeError:
    """``receive`` bounded for ``scope``'s request, or the error to answer at once when its
    ``Content-Length`` is over the bound already."""
    limit = upload_limit if scope["path"] in UPLOAD_PATHS else MAX_BODY_BYTES
    declared = _content_length(scope)
    if declared is not None and declared > limit:
        return RequestTooLargeError(limit)
    return _limited_receive(receive, limit)


def _limited_receive(receive: Receive, limit: int) -> Receive:
    """``receive``, raising ``RequestTooLargeError`` once the body passes ``limit``."""
    received = 0

    async def receive_limited() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                # Raised inside the application's body reading; dispatch answers 413.
                raise RequestTooLargeError(limit)
        return message

    return receive_limited


def _content_length(scope: Scope) -> int | None:
    declared = header(scope, b"content-length")
    if declared is None:
        return None
    try:
        return int(declared)
    except ValueError:
        return None
