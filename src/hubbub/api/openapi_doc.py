"""``GET /api/v1/openapi.json``: hubbub's own OpenAPI document, built from the endpoint
declarations (``@endpoint`` and its parameters), so it describes exactly what the code
accepts and cannot drift from it.

Each parameter's schema is its Pydantic type's JSON schema. Zulip's wire format decides how
it is carried: a string parameter is sent as is; any other is JSON text inside the form or
query value (``narrow=[...]``, ``num_before=100``), which OpenAPI says with a
``content: application/json`` parameter (query) or an ``application/json`` encoding of the
form field (body). GET and DELETE take query parameters; POST, PUT and PATCH a form body.

Responses are described by their envelope: success is ``{"result": "success", "msg": ""}``
plus the operation's fields (which Zulip's own document, not this one, details), an error is
``{"result": "error", "msg": ..., "code": ...}``.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.metadata import version
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from hubbub.api.endpoint import ENDPOINTS, Endpoint
from hubbub.api.params import ParamSpec

OPENAPI_PATH = "/api/v1/openapi.json"
_PATH_PARAM = re.compile(r"\{(\w+)(?::(\w+))?\}")
_BODY_METHODS = {"POST", "PUT", "PATCH"}

_SUCCESS = {
    "type": "object",
    "required": ["result", "msg"],
    "properties": {"result": {"enum": ["success"]}, "msg": {"type": "string"}},
    "additionalProperties": True,
}
_ERROR = {
    "type": "object",
    "required": ["result", "msg"],
    "properties": {
        "result": {"enum": ["error"]},
        "msg": {"type": "string"},
        "code": {"type": "string"},
    },
    "additionalProperties": True,
}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _responses(ep: Endpoint) -> dict[str, Any]:
    responses: dict[str, Any] = {
        "200": {"description": "Success", **_json(_SUCCESS)},
        "400": {"description": "Invalid request", **_json(_ERROR)},
        "405": {"description": "Method not allowed", **_json(_ERROR)},
        "413": {"description": "Request too large", **_json(_ERROR)},
        "429": {"description": "Rate limit exceeded", **_json(_ERROR)},
    }
    if ep.auth:
        responses["401"] = {"description": "Not authenticated", **_json(_ERROR)}
        responses["403"] = {"description": "Not allowed", **_json(_ERROR)}
        responses["404"] = {"description": "No such object", **_json(_ERROR)}
    if ep.path.startswith("/user_uploads/"):
        # A download answers with the file itself, or redirects to it.
        responses["200"] = {"description": "The file", "content": {"*/*": {"schema": {}}}}
        responses["302"] = {"description": "Redirect to the file"}
    return responses


def _value_schema(spec: ParamSpec) -> dict[str, Any]:
    schema = spec.adapter.json_schema(ref_template="#/components/schemas/{model}")
    defs = schema.pop("$defs", None)
    if defs:
        _SCHEMAS.update(defs)
    if not spec.required:
        schema = _without_null(schema)
    return schema


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """An optional parameter whose default is None is declared ``T | None``; on the wire
    None is "leave it out", so the document offers only ``T``."""
    members = schema.get("anyOf")
    if not members or {"type": "null"} not in members:
        return schema
    rest = [m for m in members if m != {"type": "null"}]
    base = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
    return {**base, **rest[0]} if len(rest) == 1 else {**base, "anyOf": rest}


# Shared sub-schemas ($defs) of the parameters, collected while building.
_SCHEMAS: dict[str, Any] = {}


def _operation(ep: Endpoint) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": f"{ep.method.lower()}_{ep.func.__name__}",
        "summary": ep.summary,
        "responses": _responses(ep),
    }
    if not ep.auth:
        op["security"] = []
    params: list[dict[str, Any]] = []
    body: dict[str, Any] = {}
    encoding: dict[str, Any] = {}
    required: list[str] = []
    for spec in ep.specs:
        schema = _value_schema(spec)
        if spec.path:
            params.append({"name": spec.name, "in": "path", "required": True, "schema": schema})
        elif ep.method in _BODY_METHODS:
            body[spec.name] = schema
            if spec.json:
                encoding[spec.name] = {"contentType": "application/json"}
            if spec.required:
                required.append(spec.name)
        else:
            param: dict[str, Any] = {"name": spec.name, "in": "query", "required": spec.required}
            param.update(_json(schema) if spec.json else {"schema": schema})
            if spec.description:
                param["description"] = spec.description
            params.append(param)
    if params:
        op["parameters"] = params
    if body:
        form: dict[str, Any] = {"schema": {"type": "object", "properties": body}}
        if required:
            form["schema"]["required"] = required
        if encoding:
            form["encoding"] = encoding
        op["requestBody"] = {
            "required": bool(required),
            "content": {"application/x-www-form-urlencoded": form},
        }
    return op


def _openapi_path(path: str) -> str:
    return _PATH_PARAM.sub(lambda m: "{" + m.group(1) + "}", path)


@cache
def build_openapi() -> dict[str, Any]:
    """The document for every registered endpoint (built once per process)."""
    paths: dict[str, dict[str, Any]] = {}
    for ep in sorted(ENDPOINTS, key=lambda e: (e.path, e.method)):
        paths.setdefault(_openapi_path(ep.path), {})[ep.method.lower()] = _operation(ep)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "hubbub",
            "version": version("hubbub"),
            "description": "The Zulip REST API (Zulip Server 8.0, feature level 237) as "
            "served by hubbub, generated from its endpoint declarations.",
        },
        "servers": [{"url": "/api/v1"}],
        "security": [{"basicAuth": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"basicAuth": {"type": "http", "scheme": "basic"}},
            "schemas": dict(_SCHEMAS),
        },
    }


async def _serve(request: Request) -> Response:
    import orjson

    return Response(orjson.dumps(build_openapi()), media_type="application/json")


def openapi_routes() -> list[BaseRoute]:
    return [Route(OPENAPI_PATH, _serve, methods=["GET", "HEAD"])]
