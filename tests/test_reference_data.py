"""The reference data in tests/reference: the derived document is current, every additions
file applies, each kind of entry does what tests/reference/README.md says, and a broken
entry is refused with a message that names its file and entry."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import jsonschema
import pytest

from tests import zulip_reference
from tests.openapi import Reference, _to_json_schema
from tests.zulip_reference import AdditionError, load_document, read_additions

ROOT = Path(__file__).resolve().parents[1]


def _load_tool(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


derive_schemas = _load_tool("derive_schemas")


def test_derived_document_is_current() -> None:
    source: Path = derive_schemas.DEFAULT_SOURCE
    if not source.is_file():
        pytest.skip(
            f"Zulip's original OpenAPI document is not at {source}, so the derived copy "
            "cannot be re-derived here; every other test uses the derived copy"
        )
    expected = derive_schemas.derive(source)
    assert zulip_reference.DERIVED_PATH.read_text(encoding="utf-8") == expected, (
        "tests/reference/zulip-schemas.json is stale; run: python tools/derive_schemas.py"
    )


def test_derivation_keeps_names_and_drops_prose() -> None:
    document = {
        "paths": {"/x": {"get": {"summary": "Get x.", "operationId": "get-x"}}},
        "components": {
            "schemas": {
                "Stream": {
                    "type": "object",
                    "description": "A stream.",
                    "x-curl-examples-parameters": {"oneOf": []},
                    "properties": {
                        # A property that is called "description" is kept...
                        "description": {"type": "string", "description": "Its text."},
                        "example": {"type": "string", "example": "abc", "default": "example"},
                    },
                    "example": {"description": "sample"},
                }
            }
        },
    }
    assert derive_schemas.strip_object(document) == {
        "paths": {"/x": {"get": {"operationId": "get-x"}}},
        "components": {
            "schemas": {
                "Stream": {
                    "type": "object",
                    "properties": {
                        "description": {"type": "string"},
                        "example": {"type": "string", "default": "example"},
                    },
                }
            }
        },
    }


def test_every_additions_file_applies() -> None:
    additions = read_additions()
    assert additions, "tests/reference/additions has no entries"
    document = load_document()
    # Every added schema is a valid JSON Schema once nullable is converted, as the tests
    # use it.
    for addition in additions:
        for schema in [addition.schema, *addition.add.values()]:
            if schema:
                jsonschema.Draft7Validator.check_schema(_to_json_schema(schema))
    # And the combined document is one the validator accepts.
    Reference(document)


def _write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(text, encoding="utf-8")
    return directory


GOOD = """\
- level: 300
  change: A test operation that Zulip 8.0 lacks.
  operation: {method: get, path: "/hubbub_test/{thing_id}", operationId: get-hubbub-test}
  schema:
    type: object
    additionalProperties: false
    required: [result, msg, thing]
    properties:
      result: {type: string}
      msg: {type: string}
      thing: {type: string, nullable: true}
- level: 301
  change: A test event that Zulip 8.0 lacks.
  variant: events
  schema:
    type: object
    additionalProperties: false
    required: [id, type, op]
    properties:
      id: {$ref: "#/components/schemas/EventIdSchema"}
      type:
        allOf:
          - $ref: "#/components/schemas/EventTypeSchema"
          - enum: [hubbub_test]
      op: {type: string, enum: [add]}
- level: 302
  change: The test event gained a field, found through its alias.
  properties: event:hubbub_test:add
  add:
    name: {type: string}
  required: [name]
- level: 303
  change: The reaction add event (written with allOf) gained a test field.
  properties: event:reaction:add
  add:
    hubbub_test: {type: boolean}
- level: 304
  change: The linkifiers event's list became a test string.
  replace: event:realm_linkifiers/realm_linkifiers
  schema: {type: string}
- level: 305
  change: The register response gained a test field.
  properties: register
  add:
    hubbub_test_field: {type: integer}
- level: 306
  change: A component gained a test field, found through a JSON pointer.
  properties: /components/schemas/RealmDomain/properties
  add:
    hubbub_test_field: {type: integer}
- level: 307
  change: A component lost a required field.
  remove: /components/schemas/RealmDomain/properties
  keys: [allow_subdomains]
- level: 308
  change: An operation whose 200 is the shared SimpleSuccess response got a body of its own.
  replace: /paths/~1messages~1{message_id}/patch/responses/200/content/application~1json/schema
  schema:
    type: object
    additionalProperties: false
    properties:
      result: {type: string}
      msg: {type: string}
      hubbub_test: {type: integer}
"""


def _event_body(event: dict[str, object]) -> dict[str, object]:
    return {"result": "success", "msg": "", "queue_id": "q", "events": [event]}


def test_every_kind_of_entry_applies(tmp_path: Path) -> None:
    additions = _write(tmp_path, "good.yaml", GOOD)
    reference = Reference(load_document(additions_dir=additions))
    # The added operation is found like a documented one, and validated.
    assert reference.find_template("/hubbub_test/12") == "/hubbub_test/{thing_id}"
    assert reference.documented("GET", "/hubbub_test/{thing_id}")
    assert not reference.documented("POST", "/hubbub_test/{thing_id}")
    ok = {"result": "success", "msg": "", "thing": None}
    reference.validate("GET", "/hubbub_test/{thing_id}", 200, ok)
    with pytest.raises(jsonschema.ValidationError):
        reference.validate("GET", "/hubbub_test/{thing_id}", 200, {**ok, "extra": 1})
    # The new event, with the field an alias added to it (required).
    event = {"id": 1, "type": "hubbub_test", "op": "add", "name": "x"}
    reference.validate("GET", "/events", 200, _event_body(event))
    with pytest.raises(jsonschema.ValidationError):
        reference.validate("GET", "/events", 200, _event_body({**event, "name": 5}))
    with pytest.raises(jsonschema.ValidationError):
        reference.validate("GET", "/events", 200, _event_body({"id": 1, "type": "hubbub_test"}))
    # The replaced schema.
    linkifiers = {"id": 2, "type": "realm_linkifiers", "realm_linkifiers": "x"}
    reference.validate("GET", "/events", 200, _event_body(linkifiers))
    with pytest.raises(jsonschema.ValidationError):
        reference.validate(
            "GET", "/events", 200, _event_body({**linkifiers, "realm_linkifiers": []})
        )
    # Properties reached through the register alias, through a pointer, and inside allOf.
    register = reference.document["paths"]["/register"]["post"]["responses"]["200"]
    props = register["content"]["application/json"]["schema"]["allOf"][1]["properties"]
    assert props["hubbub_test_field"] == {"type": "integer"}
    domain = reference.document["components"]["schemas"]["RealmDomain"]
    assert "hubbub_test_field" in domain["properties"]
    # The removed property is gone, and no longer required.
    assert "allow_subdomains" not in domain["properties"]
    assert "allow_subdomains" not in domain.get("required", [])
    # The operation whose shared response was passed through has a copy of its own; the
    # shared response and its other users are unchanged.
    patched = {"result": "success", "msg": "", "hubbub_test": 1}
    reference.validate("PATCH", "/messages/{message_id}", 200, patched)
    with pytest.raises(jsonschema.ValidationError):
        reference.validate("DELETE", "/messages/{message_id}", 200, patched)
    shared = reference.document["components"]["responses"]["SimpleSuccess"]
    assert shared == {
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JsonSuccess"}}}
    }
    # The suite's own document is unchanged by a document loaded from elsewhere.
    suite = load_document()["components"]["schemas"]["RealmDomain"]
    assert "hubbub_test_field" not in suite["properties"]


def _entry(body: str, level: int | str = 300, change: str = "A test change.") -> str:
    lines = body.strip("\n").splitlines()
    return f"- level: {level}\n  change: {change}\n" + "".join(f"  {line}\n" for line in lines)


REGISTER_ADD = "properties: register\nadd:\n  {name}: {{type: string}}"

BROKEN = {
    "level below 238": (
        _entry(REGISTER_ADD.format(name="a"), level=237),
        "level must be an integer feature level from 238 to 372, not 237",
    ),
    "level above 372": (_entry(REGISTER_ADD.format(name="a"), level=373), "not 373"),
    "level as a string": (_entry(REGISTER_ADD.format(name="a"), level='"300"'), "not '300'"),
    "empty change": (_entry(REGISTER_ADD.format(name="a"), change='""'), "change must be"),
    "no action": ("- level: 300\n  change: Nothing.\n", "it has none"),
    "two actions": (
        _entry("properties: register\nvariant: events\nadd: {a: {type: string}}"),
        "it has properties, variant",
    ),
    "unknown key": (
        _entry(REGISTER_ADD.format(name="a") + "\nschema: {type: string}"),
        "unknown key(s) ['schema'] for a properties entry",
    ),
    "key already present": (
        _entry(REGISTER_ADD.format(name="realm_uri")),
        "['realm_uri'] already present in register; use replace",
    ),
    "unknown alias": (
        _entry("properties: regster\nadd: {a: {type: string}}"),
        "unknown target 'regster'",
    ),
    "pointer to nothing": (
        _entry("properties: /components/schemas/Nope/properties\nadd: {a: {type: string}}"),
        "/components/schemas has no 'Nope'",
    ),
    "pointer through a $ref": (
        _entry(
            "replace: /paths/~1register/post/responses/200/content/application~1json/schema"
            "/allOf/0/properties/msg\nschema: {}"
        ),
        "is a $ref to #/components/schemas/JsonSuccessBase",
    ),
    "pointer through a shared response, then a schema $ref": (
        _entry(
            "replace: /paths/~1messages~1{message_id}/patch/responses/200/content"
            "/application~1json/schema/allOf\nschema: {}"
        ),
        "is a $ref to #/components/schemas/JsonSuccess",
    ),
    "properties target that is not properties": (
        _entry("properties: /components/schemas/User\nadd: {a: {type: string}}"),
        "is not an object schema's properties",
    ),
    "ambiguous event": (
        _entry("properties: event:subscription\nadd: {a: {type: string}}"),
        "5 events have type 'subscription'; name the op",
    ),
    "unknown event": (
        _entry("properties: event:nope:add\nadd: {a: {type: string}}"),
        "no event with type 'nope' and op 'add'",
    ),
    "event that exists": (
        _entry(
            "variant: events\nschema:\n  type: object\n  properties:\n"
            "    type: {type: string, enum: [reaction]}\n    op: {type: string, enum: [add]}"
        ),
        "already documents a 'reaction' event with that op",
    ),
    "operation that exists": (
        _entry("operation: {method: get, path: /users/me}\nschema: {type: object}"),
        "GET /users/me is already documented",
    ),
    "operation path spelt differently": (
        _entry("operation: {method: get, path: '/users/{id}/reactivate'}\nschema: {}"),
        "spell it /users/{user_id}/reactivate",
    ),
    "typo in a schema keyword": (
        _entry("properties: register\nadd:\n  a: {type: string, nulable: true}"),
        "unknown schema keyword(s) ['nulable']",
    ),
    "unknown type": (_entry("properties: register\nadd:\n  a: {type: str}"), "unknown type 'str'"),
    "required that is not a property": (
        _entry(REGISTER_ADD.format(name="a") + "\nrequired: [b]"),
        "required names ['b'], which are not properties",
    ),
    "$ref to nothing": (
        _entry("properties: register\nadd:\n  a: {$ref: '#/components/schemas/Nope'}"),
        "$ref '#/components/schemas/Nope' leads nowhere",
    ),
    "replace of a bare alias": (
        _entry("replace: register\nschema: {type: object}"),
        "replace needs a schema inside 'register'",
    ),
    "remove of an absent key": (
        _entry("remove: register\nkeys: [hubbub_no_such_key]"),
        "are not properties of register",
    ),
    "remove without keys": (_entry("remove: register\nkeys: []"), "needs keys"),
    "variant on a mapping": (
        _entry("variant: register\nschema: {type: object}"),
        "is not a list of variants",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_entry_is_refused(tmp_path: Path, case: str) -> None:
    text, message = BROKEN[case]
    # A good entry first, so the message must name the second.
    good = _entry(REGISTER_ADD.format(name="hubbub_fine"), level=250)
    additions = _write(tmp_path, "broken.yaml", good + text)
    with pytest.raises(AdditionError) as refused:
        load_document(additions_dir=additions)
    assert str(refused.value).startswith("broken.yaml, entry 2"), str(refused.value)
    assert message in str(refused.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [("[]\n", "must be a non-empty YAML list"), ("a: [\n", "not valid YAML"), ("", "non-empty")],
)
def test_malformed_file_is_refused(tmp_path: Path, text: str, message: str) -> None:
    additions = _write(tmp_path, "bad.yaml", text)
    with pytest.raises(AdditionError) as refused:
        read_additions(additions)
    assert str(refused.value).startswith("bad.yaml: "), str(refused.value)
    assert message in str(refused.value)


def test_files_apply_in_name_order(tmp_path: Path) -> None:
    # b.yaml adds a field to the event a.yaml adds; the other order would not resolve.
    _write(tmp_path, "a.yaml", GOOD.split("- level: 302")[0])
    second = "- level: 302" + GOOD.split("- level: 302")[1].split("- level: 303")[0]
    _write(tmp_path, "b.yaml", second)
    document = load_document(additions_dir=tmp_path)
    assert [a.source for a in read_additions(tmp_path)] == ["a.yaml", "a.yaml", "b.yaml"]
    kinds = [zulip_reference.event_kind(m) for m in zulip_reference.events_list(document)]
    assert (["hubbub_test"], ["add"]) in kinds
