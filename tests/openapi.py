"""Validate response bodies against Zulip's OpenAPI document.

The document is Zulip 8.0's, as kept in tests/reference (prose removed), with the schemas
that later feature levels added applied from tests/reference/additions (see
tests/zulip_reference.py; HUBBUB_ZULIP_OPENAPI names another copy of the 8.0 document to use
as the base). Its schemas forbid undocumented keys (``additionalProperties: false``), so an
extra key in one of our responses fails here.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from tests.zulip_reference import base_path, load_document

SPEC_PATH = base_path()
_URN = "urn:zulip-openapi"


def _to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0 -> JSON Schema: ``nullable: true`` becomes an explicit null type."""
    if isinstance(node, list):
        return [_to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _to_json_schema(value) for key, value in node.items()}
    if out.pop("nullable", False):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        if "$ref" in out or "allOf" in out or "oneOf" in out or "anyOf" in out:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def _allow_slim_presences(document: dict[str, Any]) -> None:
    """Zulip 8.0's document describes /register ``presences`` only in the legacy form, yet
    Zulip sends the modern ``{active_timestamp, idle_timestamp}`` form to clients that ask
    for ``slim_presence`` (later documents have both); accept either."""
    schema = document["paths"]["/register"]["post"]["responses"]["200"]["content"]
    props = schema["application/json"]["schema"]["allOf"][1]["properties"]
    modern = {
        "type": "object",
        "additionalProperties": False,
        "required": ["active_timestamp", "idle_timestamp"],
        "properties": {
            "active_timestamp": {"type": "integer"},
            "idle_timestamp": {"type": "integer"},
        },
    }
    legacy = props["presences"]["additionalProperties"]
    props["presences"]["additionalProperties"] = {"anyOf": [legacy, modern]}


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


class Reference:
    """One OpenAPI document (with its additions applied) to validate bodies against."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document: dict[str, Any] = _to_json_schema(document)
        _allow_slim_presences(self.document)
        self._registry = Registry().with_resource(
            _URN, Resource.from_contents(self.document, DRAFT7)
        )
        # Literal paths first, so ``/users/me`` is found before ``/users/{id}``.
        paths = sorted(self.document["paths"], key=lambda p: (p.count("{"), p))
        self._templates: list[tuple[re.Pattern[str], str]] = [
            (re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(p)) + "$"), p)
            for p in paths
        ]

    def find_template(self, path: str) -> str | None:
        """The documented path template a concrete path (without /api/v1) matches."""
        for pattern, template in self._templates:
            if pattern.match(path):
                return template
        return None

    def documented(self, method: str, template: str) -> bool:
        return method.lower() in self.document["paths"].get(template, {})

    def validate(self, method: str, template: str, status: int, body: Any) -> None:
        """Raise ``jsonschema.ValidationError`` unless ``body`` matches the schema."""
        responses = self.document["paths"][template][method.lower()]["responses"]
        if str(status) not in responses:
            raise AssertionError(f"{method} {template}: status {status} is not documented")
        pointer = "/".join(
            _escape(p) for p in ["paths", template, method.lower(), "responses", str(status)]
        )
        response = responses[str(status)]
        if "$ref" in response:
            pointer = response["$ref"].lstrip("#/")
        schema = {"$ref": f"{_URN}#/{pointer}/content/application~1json/schema"}
        jsonschema.Draft7Validator(schema, registry=self._registry).validate(body)


@functools.cache
def reference() -> Reference:
    """The suite's document: the base at SPEC_PATH plus tests/reference/additions."""
    return Reference(load_document(SPEC_PATH))


def spec() -> dict[str, Any]:
    return reference().document


def find_template(path: str) -> str | None:
    return reference().find_template(path)


def documented(method: str, template: str) -> bool:
    return reference().documented(method, template)


def validate(method: str, template: str, status: int, body: Any) -> None:
    reference().validate(method, template, status, body)
