"""docs/api-coverage.md is current, and every hubbub endpoint is a documented Zulip operation
(or a declared hubbub extension)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests import openapi, zulip_reference

TOOL = Path(__file__).resolve().parents[1] / "tools" / "api_coverage.py"


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("api_coverage", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses look their module up in sys.modules while the module executes.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


coverage = _load_tool()


@pytest.fixture(scope="module")
def spec_path() -> Path:
    # The same base document the API tests validate against (the additions apply on top).
    return openapi.SPEC_PATH


def test_coverage_document_is_current(spec_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = coverage.main(["--check", "--spec", str(spec_path)])
    assert status == 0, (
        "docs/api-coverage.md is stale; regenerate it with: python tools/api_coverage.py\n"
        + capsys.readouterr().err
    )


def test_every_endpoint_is_a_zulip_operation_or_a_declared_extension(spec_path: Path) -> None:
    operations = coverage.spec_operations(coverage.load_spec(spec_path))
    documented = {(op.method, op.path) for op in operations}
    undeclared = []
    for endpoint in coverage.registered_endpoints():
        key = (endpoint.method, endpoint.path)
        if key in coverage.HUBBUB_EXTENSIONS:
            # A declared extension must really be missing from Zulip's document.
            assert coverage.find_spec_operation(endpoint, operations) is None, key
        elif coverage.find_spec_operation(endpoint, operations) is None:
            undeclared.append(f"{endpoint.method} {endpoint.path} ({endpoint.handler})")
    assert not undeclared, (
        "endpoints that Zulip's document lacks; list them in HUBBUB_EXTENSIONS: "
        + ", ".join(undeclared)
    )
    registered = {(ep.method, ep.path) for ep in coverage.registered_endpoints()}
    stale = set(coverage.HUBBUB_EXTENSIONS) - registered
    assert not stale, f"HUBBUB_EXTENSIONS names endpoints hubbub no longer has: {stale}"
    # The pseudo-operations are reported in a note, never as operations.
    assert not any(path in coverage.PSEUDO_OPERATIONS for _, path in documented)


def test_operations_from_additions_count_as_documented(spec_path: Path, tmp_path: Path) -> None:
    (tmp_path / "extra.yaml").write_text(
        "- level: 300\n"
        "  change: A test operation that Zulip 8.0 lacks.\n"
        "  operation: {method: post, path: /hubbub_test, operationId: add-hubbub-test}\n"
        "  schema: {type: object}\n",
        encoding="utf-8",
    )
    operations = coverage.spec_operations(coverage.load_spec(spec_path, tmp_path))
    added = [op for op in operations if op.path == "/hubbub_test"]
    assert added == [coverage.SpecOperation("POST", "/hubbub_test", "add-hubbub-test", 300)]
    endpoints = _endpoints(("POST", "/hubbub_test"))
    result = coverage.build_coverage(added, endpoints, [])
    assert result.outside == []
    assert [row.status for row in result.rows] == [coverage.STATUS_IMPLEMENTED]
    assert "`add-hubbub-test`, added at feature level 300" in coverage.render(result)
    # Only the given directory's additions apply: the base document plus the one operation.
    base = coverage.spec_operations(coverage.load_spec(spec_path, tmp_path / "none"))
    assert all(op.added_at is None for op in base)
    assert {(op.method, op.path) for op in operations} == {(op.method, op.path) for op in base} | {
        ("POST", "/hubbub_test")
    }


def test_the_suites_operation_additions_are_listed(spec_path: Path) -> None:
    added = {
        (op.method, op.path, op.added_at)
        for op in coverage.spec_operations(coverage.load_spec(spec_path))
        if op.added_at is not None
    }
    entries = {
        (a.method.upper(), a.path, a.level)
        for a in zulip_reference.read_additions()
        if a.action == "operation"
    }
    assert added == entries


def test_spec_operations_cover_the_whole_document(spec_path: Path) -> None:
    spec = coverage.load_spec(spec_path)
    operations = coverage.spec_operations(spec)
    listed = {(op.method, op.path) for op in operations}
    for path, item in spec["paths"].items():
        for method in item:
            if method.upper() in coverage.HTTP_METHODS and path not in coverage.PSEUDO_OPERATIONS:
                assert (method.upper(), path) in listed
    assert len(listed) == len(operations)


def _endpoints(*pairs: tuple[str, str]) -> list[object]:
    return [
        coverage.HubbubEndpoint(method, path, f"h{i}") for i, (method, path) in enumerate(pairs)
    ]


USERS = _endpoints(
    ("GET", "/users/me"),
    ("GET", "/users/{user_id:int}"),
    ("GET", "/users/{email}"),
    ("PATCH", "/users/{user_id:int}"),
)


def _matched(source: str) -> list[tuple[str, str]]:
    calls = coverage.calls_in_source(source, "tests/example.py")
    assert len(calls) == 1, calls
    return [(ep.method, ep.path) for ep in coverage.match_call(calls[0], USERS)]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('client.get("/users/me")', [("GET", "/users/me")]),
        ('client.get("/users/12")', [("GET", "/users/{user_id:int}")]),
        ('client.get("/users/iago@example.com")', [("GET", "/users/{email}")]),
        ('client.get(f"/users/{hamlet.id}")', [("GET", "/users/{user_id:int}")]),
        ('client.get(f"/users/{hamlet.email}")', [("GET", "/users/{email}")]),
        ('client.get("/api/v1/users/me?x=1")', [("GET", "/users/me")]),
        ('client.head("/users/me")', [("GET", "/users/me")]),
        ('client.request("PATCH", f"/users/{user_id}", {})', [("PATCH", "/users/{user_id:int}")]),
        ('client.call_endpoint(url="users/me", method="GET")', [("GET", "/users/me")]),
        ('ME = "/users/me"\nclient.get(ME)', [("GET", "/users/me")]),
        ('client.patch("/users/me")', []),
        ('client.get("/users/me/alert_words")', []),
    ],
)
def test_test_calls_are_matched_to_routes(source: str, expected: list[tuple[str, str]]) -> None:
    assert _matched(source) == expected


def test_non_api_calls_are_ignored() -> None:
    source = (
        'body.get("members")\nheaders.get("retry-after")\nhttp.request(method, API + path)\n'
        "client.get(UNKNOWN_NAME)\n"
    )
    assert coverage.calls_in_source(source, "tests/example.py") == []


@pytest.mark.parametrize(
    ("method", "path", "issue"),
    [
        ("POST", "/register", "issue 3"),
        ("GET", "/events", "issue 3"),
        ("GET", "/streams/{stream_id}", "issue 4"),
        ("PATCH", "/users/me/subscriptions/muted_topics", "issue 4"),
        ("GET", "/users/me/{stream_id}/topics", "issue 4"),
        ("GET", "/users/{user_id}/subscriptions/{stream_id}", "issue 4"),
        ("PATCH", "/realm/user_settings_defaults", "issue 5"),
        ("GET", "/users/{user_id_or_email}/presence", "issue 5"),
        ("POST", "/users/me/muted_users/{muted_user_id}", "issue 5"),
        ("POST", "/messages", "issue 6"),
        ("GET", "/messages/{message_id}", "issue 6"),
        ("POST", "/messages/render", "issue 6"),
        ("PATCH", "/messages/{message_id}", "issue 7"),
        ("POST", "/messages/flags/narrow", "issue 7"),
        ("POST", "/mark_topic_as_read", "issue 7"),
        ("DELETE", "/messages/{message_id}/reactions", "issue 7"),
        ("GET", "/user_uploads/{realm_id_str}/{filename}", "issue 8"),
        ("DELETE", "/attachments/{attachment_id}", "issue 8"),
        ("POST", "/dev_fetch_api_key", "not planned"),
        ("GET", "/calls/bigbluebutton/create", "not planned"),
    ],
)
def test_planned_issue(method: str, path: str, issue: str) -> None:
    assert coverage.planned_issue(method, path) == issue


def test_endpoints_outside_the_document_are_reported() -> None:
    operations = [coverage.SpecOperation("GET", "/users/{user_id}", "get-user")]
    endpoints = _endpoints(("GET", "/users/{user_id:int}"), ("POST", "/hubbub/extra"))
    result = coverage.build_coverage(operations, endpoints, [])
    assert [row.status for row in result.rows] == [coverage.STATUS_IMPLEMENTED]
    assert [(ep.path, declared) for ep, declared in result.outside] == [("/hubbub/extra", False)]
    assert "`/hubbub/extra`" in coverage.render(result)
