"""``GET /api/v1/openapi.json``: the document is built from the endpoint
declarations, so it lists exactly the operations and parameters the code serves."""

from __future__ import annotations

import re
from typing import Any

import schemathesis
from schemathesis.core.result import Ok

from hubbub.api.endpoint import ENDPOINTS
from hubbub.api.openapi_doc import build_openapi
from tests.helpers import TestEnv


async def _served(env: TestEnv) -> dict[str, Any]:
    client = env.client("hamlet")
    client.user = None  # the document needs no login
    response = await client.get("/openapi.json")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    return body


def _declared(doc: dict[str, Any], method: str, path: str) -> dict[str, bool]:
    """Parameter name -> required, from the document's operation."""
    op = doc["paths"][path][method.lower()]
    found = {p["name"]: bool(p["required"]) for p in op.get("parameters", [])}
    body = op.get("requestBody", {}).get("content", {}).get("application/x-www-form-urlencoded")
    if body:
        required = set(body["schema"].get("required", []))
        found.update({name: name in required for name in body["schema"]["properties"]})
    return found


async def test_served_document_matches_the_declarations(env: TestEnv) -> None:
    doc = await _served(env)
    assert doc == build_openapi()
    assert doc["openapi"].startswith("3.1")
    operations = {(m.upper(), p) for p, ms in doc["paths"].items() for m in ms}
    assert len(operations) == len(ENDPOINTS)
    for ep in ENDPOINTS:
        path = re.sub(r"\{(\w+):\w+\}", r"{\1}", ep.path)
        assert (ep.method, path) in operations
        expected = {spec.name: spec.required or spec.path for spec in ep.specs}
        assert _declared(doc, ep.method, path) == expected, (ep.method, path)
        op = doc["paths"][path][ep.method.lower()]
        assert (op.get("security") == []) is (not ep.auth)


async def test_json_parameters_are_marked_as_json(env: TestEnv) -> None:
    doc = await _served(env)
    get_messages = {p["name"]: p for p in doc["paths"]["/messages"]["get"]["parameters"]}
    # narrow and num_before travel as JSON text; anchor is a plain string.
    assert "content" in get_messages["narrow"] and "schema" not in get_messages["narrow"]
    assert get_messages["num_before"]["content"]["application/json"]["schema"] == {
        "type": "integer"
    }
    assert get_messages["anchor"]["schema"]["type"] == "string"
    send = doc["paths"]["/messages"]["post"]["requestBody"]["content"][
        "application/x-www-form-urlencoded"
    ]
    # "to" is a string (a JSON list or a plain name, decided by the endpoint).
    assert send["schema"]["properties"]["to"]["type"] == "string"
    assert send["encoding"]["read_by_sender"] == {"contentType": "application/json"}
    assert set(send["schema"]["required"]) >= {"type", "to", "content"}


async def test_document_loads_in_an_openapi_tool(env: TestEnv) -> None:
    schema = schemathesis.openapi.from_dict(await _served(env))
    results = list(schema.get_all_operations())
    assert len(results) == len(ENDPOINTS)
    assert all(isinstance(result, Ok) for result in results)
