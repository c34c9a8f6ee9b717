"""JSON responses in Zulip's envelope: ``{"result", "msg", ...}``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from starlette.responses import Response

from hubbub.errors import ApiError


class JsonResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def json_success(
    data: Mapping[str, Any] | None = None, *, ignored: list[str] | None = None
) -> JsonResponse:
    body: dict[str, Any] = {"result": "success", "msg": ""}
    if data:
        body.update(data)
    if ignored:
        # Zulip 7.0 (feature level 167): unknown parameters are reported, sorted.
        body["ignored_parameters_unsupported"] = sorted(ignored)
    return JsonResponse(body)


def json_error(error: ApiError, headers: Mapping[str, str] | None = None) -> JsonResponse:
    body: dict[str, Any] = {"result": "error", "msg": error.msg}
    if error.code is not None:
        body["code"] = error.code.value
    body.update(error.data())
    all_headers = {**error.headers(), **(headers or {})}
    return JsonResponse(body, status_code=error.http_status, headers=all_headers)
