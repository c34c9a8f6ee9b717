"""JSON responses in Zulip's envelope: ``{"result", "msg", ...}``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from starlette.responses import Response

from hubbub.errors import ApiError

_CONTENT_TYPE = (b"content-type", b"application/json")


class JsonResponse(Response):
    """A Starlette response of JSON, its headers built directly: Starlette's
    ``init_headers`` and a later ``headers.update`` cost a long-poll's answer more than
    encoding its events."""

    def __init__(
        self, content: Any, status_code: int = 200, headers: Mapping[str, str] | None = None
    ) -> None:
        self.status_code = status_code
        self.background = None
        self.body = orjson.dumps(content)
        self.raw_headers = [(b"content-length", b"%d" % len(self.body)), _CONTENT_TYPE]
        if headers:
            self.raw_headers += [
                (name.lower().encode("latin-1"), value.encode("latin-1"))
                for name, value in headers.items()
            ]


def json_success(
    data: Mapping[str, Any] | None = None,
    *,
    ignored: list[str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JsonResponse:
    body: dict[str, Any] = {"result": "success", "msg": ""}
    if data:
        body.update(data)
    if ignored:
        # Zulip 7.0 (feature level 167): unknown parameters are reported, sorted.
        body["ignored_parameters_unsupported"] = sorted(ignored)
    return JsonResponse(body, headers=headers)


def json_error(error: ApiError, headers: Mapping[str, str] | None = None) -> JsonResponse:
    body: dict[str, Any] = {"result": "error", "msg": error.msg}
    if error.code is not None:
        body["code"] = error.code.value
    body.update(error.data())
    all_headers = {**error.headers(), **(headers or {})}
    return JsonResponse(body, status_code=error.http_status, headers=all_headers)
