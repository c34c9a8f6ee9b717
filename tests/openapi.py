"""Validate response bodies against Zulip 8.0's own OpenAPI document.

The document lives in ../shared/reference (HUBBUB_ZULIP_OPENAPI overrides the path). Its
schemas forbid undocumented keys (``additionalProperties: false``), so an extra key in one
of our responses fails here.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

_CANDIDATES = (
    # ../shared/reference beside the checkout, as in the development workspace...
    Path(__file__).resolve().parents[2] / "shared" / "reference" / "zulip-openapi.yaml",
    # ...and the workspace's fixed location, for a clone made elsewhere (CI).
    Path("/work/shared/reference/zulip-openapi.yaml"),
)


def _find_spec() -> Path:
    if os.environ.get("HUBBUB_ZULIP_OPENAPI"):
        return Path(os.environ["HUBBUB_ZULIP_OPENAPI"])
    for candidate in _CANDIDATES:
        if candidate.is_file():
            return candidate
    raise RuntimeError(
        "Zulip's OpenAPI document was not found at "
        + " or ".join(str(c) for c in _CANDIDATES)
        + "; set HUBBUB_ZULIP_OPENAPI to its path"
    )


SPEC_PATH = _find_spec()
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


@functools.cache
def spec() -> dict[str, Any]:
    with SPEC_PATH.open() as handle:
        document: dict[str, Any] = _to_json_schema(yaml.safe_load(handle))
    _allow_slim_presences(document)
    return document


@functools.cache
def _registry() -> Registry:
    return Registry().with_resource(_URN, Resource.from_contents(spec(), DRAFT7))


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


@functools.cache
def _templates() -> list[tuple[re.Pattern[str], str]]:
    """Spec paths as regexes, literal paths first (``/users/me`` before ``/users/{id}``)."""
    paths = sorted(spec()["paths"], key=lambda p: (p.count("{"), p))
    return [
        (re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(p)) + "$"), p) for p in paths
    ]


def find_template(path: str) -> str | None:
    """The documented path template a concrete path (without /api/v1) matches, if any."""
    for pattern, template in _templates():
        if pattern.match(path):
            return template
    return None


def documented(method: str, template: str) -> bool:
    return method.lower() in spec()["paths"].get(template, {})


def validate(method: str, template: str, status: int, body: Any) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``body`` matches the documented schema."""
    responses = spec()["paths"][template][method.lower()]["responses"]
    if str(status) not in responses:
        raise AssertionError(f"{method} {template}: status {status} is not documented")
    pointer = "/".join(
        _escape(p) for p in ["paths", template, method.lower(), "responses", str(status)]
    )
    response = responses[str(status)]
    if "$ref" in response:
        pointer = response["$ref"].lstrip("#/")
    schema = {"$ref": f"{_URN}#/{pointer}/content/application~1json/schema"}
    jsonschema.Draft7Validator(schema, registry=_registry()).validate(body)
