"""Zulip's API document as hubbub's tests and tools read it.

The base is Zulip 8.0's OpenAPI document (feature level 237) without its prose, kept in the
checkout as tests/reference/zulip-schemas.json (tools/derive_schemas.py writes it). On top of
it, every entry of tests/reference/additions/*.yaml is applied: a schema for something a
later feature level added (up to 372, Zulip 10.2). tests/reference/README.md describes the
entries' format; this module checks every entry strictly and refuses, naming the file and
the entry, anything it cannot apply exactly as written.

This module needs nothing beyond PyYAML so that tools/api_coverage.py can use it too; the
JSON Schema conversion and validation stay in tests/openapi.py.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped,unused-ignore]

REFERENCE_DIR = Path(__file__).resolve().parent / "reference"
DERIVED_PATH = REFERENCE_DIR / "zulip-schemas.json"
ADDITIONS_DIR = REFERENCE_DIR / "additions"

# The feature levels an addition may name: after Zulip 8.0, up to Zulip 10.2.
FIRST_LEVEL = 238
LAST_LEVEL = 372

# The key, on an operation that an addition created, holding the feature level that added
# it; tools/api_coverage.py shows it.
ADDED_AT_LEVEL = "x-hubbub-added-at-level"

ACTIONS = ("operation", "properties", "variant", "replace", "remove")
METHODS = ("get", "post", "put", "patch", "delete")

# The JSON pointers behind the aliases that name properties of a 200 body.
_BODY_ALIASES = {"register": ("/register", "post"), "server_settings": ("/server_settings", "get")}

# OpenAPI 3.0 schema keywords an added schema may use; anything else is most likely a typo
# that would silently constrain nothing.
SCHEMA_KEYWORDS = frozenset(
    {
        "$ref",
        "additionalProperties",
        "allOf",
        "anyOf",
        "default",
        "deprecated",
        "description",
        "enum",
        "example",
        "exclusiveMaximum",
        "exclusiveMinimum",
        "format",
        "items",
        "maxItems",
        "maxLength",
        "maxProperties",
        "maximum",
        "minItems",
        "minLength",
        "minProperties",
        "minimum",
        "multipleOf",
        "not",
        "nullable",
        "oneOf",
        "pattern",
        "properties",
        "readOnly",
        "required",
        "title",
        "type",
        "uniqueItems",
        "writeOnly",
    }
)
SCHEMA_TYPES = frozenset({"array", "boolean", "integer", "number", "object", "string"})


class AdditionError(ValueError):
    """An additions file that is malformed, or an entry that does not apply."""


@dataclass(frozen=True)
class Addition:
    """One validated entry of an additions file."""

    source: str  # the file's name, for messages
    index: int  # 1-based position in the file
    level: int
    change: str
    action: str  # one of ACTIONS
    target: str = ""  # for properties, variant and replace
    method: str = ""  # for operation
    path: str = ""  # for operation
    operation_id: str = ""  # for operation, optional
    schema: dict[str, Any] = field(default_factory=dict)
    add: dict[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()  # for remove

    @property
    def where(self) -> str:
        return f"{self.source}, entry {self.index} (level {self.level})"

    def fail(self, problem: str) -> AdditionError:
        return AdditionError(f"{self.where}: {problem}")


# ---------------------------------------------------------------------------------------
# Reading


def base_path() -> Path:
    """The base document: HUBBUB_ZULIP_OPENAPI (a full YAML or JSON copy of Zulip 8.0's
    document) when set, else the derived file in the checkout."""
    override = os.environ.get("HUBBUB_ZULIP_OPENAPI")
    return Path(override) if override else DERIVED_PATH


def read_base(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as handle:
        if path.suffix == ".json":
            document = json.load(handle)
        else:
            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            document = yaml.load(handle, Loader=loader)
    if not isinstance(document, dict) or not isinstance(document.get("paths"), dict):
        raise ValueError(f"{path} is not an OpenAPI document (no 'paths')")
    return document


def _check_schema(schema: Any, where: str) -> None:
    """Refuse a schema that uses a keyword or type OpenAPI 3.0 does not know."""
    if not isinstance(schema, dict):
        raise AdditionError(f"{where}: a schema must be a mapping, not {schema!r}")
    unknown = sorted(set(schema) - SCHEMA_KEYWORDS)
    if unknown:
        raise AdditionError(f"{where}: unknown schema keyword(s) {unknown}")
    if "type" in schema and schema["type"] not in SCHEMA_TYPES:
        raise AdditionError(f"{where}: unknown type {schema['type']!r}")
    for name, sub in (schema.get("properties") or {}).items():
        _check_schema(sub, f"{where}, property {name!r}")
    for keyword in ("items", "not"):
        if keyword in schema:
            _check_schema(schema[keyword], f"{where}, {keyword}")
    if isinstance(schema.get("additionalProperties"), dict):
        _check_schema(schema["additionalProperties"], f"{where}, additionalProperties")
    for keyword in ("allOf", "anyOf", "oneOf"):
        if keyword in schema:
            if not isinstance(schema[keyword], list) or not schema[keyword]:
                raise AdditionError(f"{where}: {keyword} must be a non-empty list")
            for position, sub in enumerate(schema[keyword]):
                _check_schema(sub, f"{where}, {keyword}[{position}]")
    required = schema.get("required")
    if required is not None and not (
        isinstance(required, list) and all(isinstance(name, str) for name in required)
    ):
        raise AdditionError(f"{where}: required must be a list of property names")


_ENTRY_KEYS = {
    "operation": {"schema"},
    "properties": {"add", "required"},
    "variant": {"schema"},
    "replace": {"schema"},
    "remove": {"keys"},
}


def _parse_entry(source: str, index: int, entry: Any) -> Addition:
    where = f"{source}, entry {index}"
    if not isinstance(entry, dict):
        raise AdditionError(f"{where}: an entry must be a mapping")
    level = entry.get("level")
    if type(level) is not int or not FIRST_LEVEL <= level <= LAST_LEVEL:
        raise AdditionError(
            f"{where}: level must be an integer feature level from {FIRST_LEVEL} to "
            f"{LAST_LEVEL}, not {level!r}"
        )
    where = f"{where} (level {level})"
    change = entry.get("change")
    if not isinstance(change, str) or not change.strip():
        raise AdditionError(f"{where}: change must be a non-empty sentence")
    actions = [action for action in ACTIONS if action in entry]
    if len(actions) != 1:
        raise AdditionError(
            f"{where}: an entry takes exactly one of {', '.join(ACTIONS)}; it has "
            + (", ".join(actions) if actions else "none")
        )
    action = actions[0]
    allowed = {"level", "change", action, *_ENTRY_KEYS[action]}
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise AdditionError(f"{where}: unknown key(s) {unknown} for a {action} entry")
    fields: dict[str, Any] = {}
    if action in ("operation", "variant", "replace"):
        if "schema" not in entry:
            raise AdditionError(f"{where}: a {action} entry needs a schema")
        _check_schema(entry["schema"], f"{where}, schema")
        fields["schema"] = copy.deepcopy(entry["schema"])
    if action == "operation":
        operation = entry["operation"]
        if not isinstance(operation, dict) or not {"method", "path"} <= set(operation):
            raise AdditionError(f"{where}: operation must be a mapping with method and path")
        extra = sorted(set(operation) - {"method", "path", "operationId"})
        if extra:
            raise AdditionError(f"{where}: unknown operation key(s) {extra}")
        method = operation["method"]
        if not isinstance(method, str) or method.lower() not in METHODS:
            raise AdditionError(f"{where}: operation method must be one of {METHODS}")
        path = operation["path"]
        if not isinstance(path, str) or not re.fullmatch(r"(/[^/\s]+)+", path):
            raise AdditionError(
                f"{where}: operation path must look like /realm/emoji (relative to "
                f"/api/v1, no trailing slash), not {path!r}"
            )
        operation_id = operation.get("operationId", "")
        if not isinstance(operation_id, str):
            raise AdditionError(f"{where}: operationId must be a string")
        fields.update(method=method.lower(), path=path, operation_id=operation_id)
    else:
        target = entry[action]
        if not isinstance(target, str) or not target:
            raise AdditionError(f"{where}: the {action} target must be a pointer or an alias")
        fields["target"] = target
    if action == "properties":
        add = entry.get("add")
        if not isinstance(add, dict) or not add:
            raise AdditionError(f"{where}: a properties entry needs a non-empty add mapping")
        for name, schema in add.items():
            if not isinstance(name, str):
                raise AdditionError(f"{where}: property name {name!r} is not a string")
            _check_schema(schema, f"{where}, add {name!r}")
        required = entry.get("required", [])
        if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
            raise AdditionError(f"{where}: required must be a list of property names")
        if len(set(required)) != len(required):
            raise AdditionError(f"{where}: required names a property twice")
        fields.update(add=copy.deepcopy(add), required=tuple(required))
    if action == "remove":
        keys = entry.get("keys")
        if (
            not isinstance(keys, list)
            or not keys
            or not all(isinstance(name, str) for name in keys)
            or len(set(keys)) != len(keys)
        ):
            raise AdditionError(f"{where}: a remove entry needs keys, a list of distinct names")
        fields["keys"] = tuple(keys)
    return Addition(source, index, level, change.strip(), action, **fields)


def read_additions(directory: Path = ADDITIONS_DIR) -> list[Addition]:
    """Every entry of ``directory``'s ``*.yaml`` files, by file name and then position."""
    additions: list[Addition] = []
    if not directory.is_dir():
        return additions
    for file in sorted(directory.glob("*.yaml")):
        try:
            entries = yaml.safe_load(file.read_text(encoding="utf-8"))
        except yaml.YAMLError as error:
            raise AdditionError(f"{file.name}: not valid YAML: {error}") from error
        if not isinstance(entries, list) or not entries:
            raise AdditionError(f"{file.name}: an additions file must be a non-empty YAML list")
        for index, entry in enumerate(entries, start=1):
            additions.append(_parse_entry(file.name, index, entry))
    return additions


# ---------------------------------------------------------------------------------------
# Targets


@dataclass
class _Target:
    parent: Any  # the dict or list holding the node
    key: Any  # the node's key or index in parent
    properties: bool  # whether the node is an object schema's ``properties`` mapping

    @property
    def node(self) -> Any:
        return self.parent[self.key]


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _step(parent: Any, token: str, trail: str, addition: Addition) -> _Target:
    if isinstance(parent, dict):
        if token in parent:
            return _Target(parent, token, token == "properties")
        if "$ref" in parent:
            raise addition.fail(
                f"{trail} is a $ref to {parent['$ref']}; point into that schema instead"
            )
        raise addition.fail(f"{trail} has no {token!r}")
    if isinstance(parent, list):
        if token.isdigit() and int(token) < len(parent):
            return _Target(parent, int(token), False)
        raise addition.fail(f"{trail} is a list of {len(parent)}; {token!r} is not an index")
    raise addition.fail(f"{trail} is a {type(parent).__name__}, not a mapping or list")


# Shared responses (Zulip's ``SimpleSuccess``) that a pointer may pass through: see
# _localize_response.
_SHARED_RESPONSES = "#/components/responses/"


def _localize_response(document: dict[str, Any], target: _Target, token: str) -> None:
    """A pointer that passes through an operation's ``$ref`` to a shared response (such as
    ``.../responses/200`` being ``SimpleSuccess``) gets a copy of that response in its
    place, so that a change made through it (feature level 285 gave PATCH
    /messages/{message_id} a body of its own) concerns that operation alone. Other
    ``$ref``s still stop a pointer."""
    node = target.node
    ref = node.get("$ref") if isinstance(node, dict) else None
    if not isinstance(ref, str) or not ref.startswith(_SHARED_RESPONSES) or token in node:
        return
    name = _unescape(ref[len(_SHARED_RESPONSES) :])
    shared = document.get("components", {}).get("responses", {}).get(name)
    if isinstance(shared, dict) and len(node) == 1:
        target.parent[target.key] = copy.deepcopy(shared)


def _walk(
    document: dict[str, Any], start: _Target, tokens: list[str], trail: str, addition: Addition
) -> _Target:
    target = start
    for raw in tokens:
        token = _unescape(raw)
        _localize_response(document, target, token)
        target = _step(target.node, token, trail or "the document", addition)
        trail = f"{trail}/{raw}"
    return target


def _body_object(document: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    """The object schema of a 200 body: the body itself, or its allOf member with
    properties (Zulip writes bodies as ``allOf: [JsonSuccessBase, {properties...}]``)."""
    body = document["paths"][path][method]["responses"]["200"]["content"]["application/json"]
    schema: dict[str, Any] = body["schema"]
    if "properties" in schema:
        return schema
    members: list[dict[str, Any]] = [m for m in schema.get("allOf", []) if "properties" in m]
    if len(members) != 1:
        raise KeyError(f"{method.upper()} {path}'s 200 body has no single object schema")
    return members[0]


def events_list(document: dict[str, Any]) -> list[Any]:
    """The oneOf list of GET /events' event objects."""
    events = _body_object(document, "/events", "get")["properties"]["events"]
    members: list[Any] = events["items"]["oneOf"]
    return members


def event_object(member: dict[str, Any]) -> dict[str, Any] | None:
    """An event variant's object schema: the one whose properties include ``type`` (the
    variant itself, or one of its allOf members, as for reaction events)."""
    if "type" in member.get("properties", {}):
        return member
    for part in member.get("allOf", []):
        if isinstance(part, dict) and "type" in part.get("properties", {}):
            return part
    return None


def _enum_values(schema: Any) -> list[Any]:
    """The values an ``enum`` allows, written directly or inside ``allOf`` (Zulip writes
    an event's type as ``allOf: [EventTypeSchema, {enum: [...]}]``)."""
    if not isinstance(schema, dict):
        return []
    values = list(schema.get("enum", []))
    for part in schema.get("allOf", []):
        values += _enum_values(part)
    return values


def event_kind(member: dict[str, Any]) -> tuple[list[Any], list[Any] | None]:
    """(the type values, the op values or None) of an event variant."""
    obj = event_object(member)
    if obj is None:
        return [], None
    props = obj["properties"]
    return _enum_values(props["type"]), (_enum_values(props["op"]) if "op" in props else None)


def _event_target(document: dict[str, Any], alias: str, addition: Addition) -> _Target:
    parts = alias.split(":")
    if len(parts) not in (2, 3) or not all(parts[1:]):
        raise addition.fail(f"{alias!r} is not event:<type> or event:<type>:<op>")
    event_type = parts[1]
    op = parts[2] if len(parts) == 3 else None
    found = []
    for member in events_list(document):
        types, ops = event_kind(member)
        if event_type in types and (op is None or (ops is not None and op in ops)):
            found.append(member)
    if not found:
        described = f"type {event_type!r}" + (f" and op {op!r}" if op else "")
        raise addition.fail(f"GET /events documents no event with {described}")
    if len(found) > 1:
        raise addition.fail(
            f"{len(found)} events have type {event_type!r}; name the op (event:{event_type}:<op>)"
        )
    obj = event_object(found[0])
    assert obj is not None
    return _Target(obj, "properties", True)


def _resolve(document: dict[str, Any], target: str, addition: Addition) -> tuple[_Target, bool]:
    """(the target, whether it is a bare alias)."""
    if target.startswith("/"):
        tokens = target[1:].split("/")
        return _walk(document, _Target({"": document}, "", False), tokens, "", addition), False
    alias, _, rest = target.partition("/")
    if alias in _BODY_ALIASES:
        start = _Target(_body_object(document, *_BODY_ALIASES[alias]), "properties", True)
    elif alias == "events":
        events = _body_object(document, "/events", "get")["properties"]["events"]
        start = _Target(events["items"], "oneOf", False)
    elif alias.startswith("event:"):
        start = _event_target(document, alias, addition)
    else:
        raise addition.fail(
            f"unknown target {target!r}: use a JSON pointer (/components/...) or one of "
            "register, server_settings, events, event:<type>, event:<type>:<op>"
        )
    if not rest:
        return start, True
    return _walk(document, start, rest.split("/"), alias, addition), False


# ---------------------------------------------------------------------------------------
# Applying


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _pointer_exists(document: dict[str, Any], ref: str) -> bool:
    if not ref.startswith("#/"):
        return False
    node: Any = document
    for raw in ref[2:].split("/"):
        token = _unescape(raw)
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False
    return True


def _path_shape(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def _apply_operation(document: dict[str, Any], addition: Addition) -> None:
    paths = document["paths"]
    item = paths.get(addition.path, {})
    if addition.method in item:
        pointer = "/paths/" + addition.path.replace("~", "~0").replace("/", "~1")
        raise addition.fail(
            f"{addition.method.upper()} {addition.path} is already documented; to change its "
            f"body use replace: {pointer}/{addition.method}/responses/200/content/"
            "application~1json/schema"
        )
    if addition.path not in paths:
        shape = _path_shape(addition.path)
        for existing in paths:
            if _path_shape(existing) == shape:
                raise addition.fail(
                    f"{addition.path} is {existing} with other parameter names; spell it {existing}"
                )
    operation: dict[str, Any] = {
        ADDED_AT_LEVEL: addition.level,
        "responses": {
            "200": {"content": {"application/json": {"schema": copy.deepcopy(addition.schema)}}}
        },
    }
    if addition.operation_id:
        operation["operationId"] = addition.operation_id
    paths.setdefault(addition.path, {})[addition.method] = operation


def _apply_properties(document: dict[str, Any], addition: Addition) -> None:
    target, _ = _resolve(document, addition.target, addition)
    properties = target.node
    if not target.properties or not isinstance(properties, dict):
        raise addition.fail(
            f"{addition.target!r} is not an object schema's properties; point at .../properties"
        )
    present = sorted(name for name in addition.add if name in properties)
    if present:
        raise addition.fail(
            f"{present} already present in {addition.target}; use replace to change a schema"
        )
    properties.update(copy.deepcopy(addition.add))
    if addition.required:
        missing = [name for name in addition.required if name not in properties]
        if missing:
            raise addition.fail(f"required names {missing}, which are not properties")
        owner = target.parent
        required = owner.setdefault("required", [])
        again = [name for name in addition.required if name in required]
        if again:
            raise addition.fail(f"{again} already required in {addition.target}")
        required.extend(addition.required)


def _apply_variant(document: dict[str, Any], addition: Addition) -> None:
    target, _ = _resolve(document, addition.target, addition)
    members = target.node
    if not isinstance(members, list):
        raise addition.fail(f"{addition.target!r} is not a list of variants (a oneOf)")
    if members is events_list(document):
        types, ops = event_kind(addition.schema)
        if len(types) != 1:
            raise addition.fail(
                "a new event must declare properties.type with a one-value enum, so that "
                "event:<type> targets can find it"
            )
        for member in members:
            their_types, their_ops = event_kind(member)
            if types[0] not in their_types:
                continue
            # Two variants of one type must differ in op; a variant without an op covers
            # every op of its type.
            if ops is None or their_ops is None or set(ops) & set(their_ops):
                raise addition.fail(
                    f"GET /events already documents a {types[0]!r} event with that op; add "
                    "properties to it (event:<type>:<op>) or replace it"
                )
    members.append(copy.deepcopy(addition.schema))


def _apply_replace(document: dict[str, Any], addition: Addition) -> None:
    target, bare = _resolve(document, addition.target, addition)
    if bare:
        raise addition.fail(
            f"replace needs a schema inside {addition.target!r}, such as {addition.target}/<name>"
        )
    target.parent[target.key] = copy.deepcopy(addition.schema)


def _apply_remove(document: dict[str, Any], addition: Addition) -> None:
    """Drop properties a later feature level removed, so that sending them fails."""
    target, _ = _resolve(document, addition.target, addition)
    properties = target.node
    if not target.properties or not isinstance(properties, dict):
        raise addition.fail(
            f"{addition.target!r} is not an object schema's properties; point at .../properties"
        )
    absent = sorted(name for name in addition.keys if name not in properties)
    if absent:
        raise addition.fail(f"{absent} are not properties of {addition.target}")
    for name in addition.keys:
        del properties[name]
    required = target.parent.get("required")
    if isinstance(required, list):
        target.parent["required"] = [name for name in required if name not in addition.keys]


_APPLY = {
    "operation": _apply_operation,
    "properties": _apply_properties,
    "variant": _apply_variant,
    "replace": _apply_replace,
    "remove": _apply_remove,
}


def apply_additions(document: dict[str, Any], additions: list[Addition]) -> None:
    """Apply ``additions`` in order to ``document`` (in place); refuse the first that does
    not apply, and any added schema whose ``$ref`` leads nowhere."""
    for addition in additions:
        _APPLY[addition.action](document, addition)
    for addition in additions:
        added = [addition.schema, *addition.add.values()]
        for ref in _refs(added):
            if not _pointer_exists(document, ref):
                raise addition.fail(f"$ref {ref!r} leads nowhere in the document")


def load_document(path: Path | None = None, additions_dir: Path = ADDITIONS_DIR) -> dict[str, Any]:
    """The base document (``path``, else ``base_path()``) with every addition applied.

    The result is still OpenAPI 3.0 (``nullable`` as written); a fresh copy each call.
    """
    document = read_base(path or base_path())
    apply_additions(document, read_additions(additions_dir))
    return document
