"""Write docs/api-coverage.md: every operation in Zulip's OpenAPI document and where hubbub
stands on it.

    python tools/api_coverage.py            # (re)write docs/api-coverage.md
    python tools/api_coverage.py --check    # exit 1 when the file is out of date

Three inputs decide the table, and nothing else does (no clock, no network, no database):

1. Zulip's OpenAPI document as the tests read it (tests/zulip_reference.py): Zulip 8.0's
   document (``--spec``, else ``HUBBUB_ZULIP_OPENAPI``, else the copy without prose in
   ``tests/reference/zulip-schemas.json``) with ``tests/reference/additions/*.yaml``
   applied, so an operation a later feature level added counts as documented.
2. The operations hubbub registers: importing ``hubbub.api.routes`` fills the ``ENDPOINTS``
   list of the ``@endpoint`` decorator.
3. The API calls written in the test suite: every ``*.py`` file under ``tests/`` is parsed
   (with ``ast``, never imported) and each call of the form ``x.get("/path")``,
   ``x.post(f"/users/{user.id}")``, ``x.request("PATCH", "/path")`` or
   ``x.call_endpoint(url="users/me", method="GET")`` is matched against hubbub's routes.
   See ``match_call`` for the exact rules.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# Run as a script, only tools/ is on the import path; the document loader is in tests/.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.zulip_reference import (  # noqa: E402
    ADDED_AT_LEVEL,
    ADDITIONS_DIR,
    base_path,
    load_document,
)

OUTPUT = ROOT / "docs" / "api-coverage.md"
TESTS_DIR = ROOT / "tests"
API_PREFIX = "/api/v1"

HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")
# Table order within one path.
_METHOD_ORDER = {method: index for index, method in enumerate(HTTP_METHODS)}

# Entries of Zulip's document that describe behaviour rather than an endpoint a client
# calls; they are left out of the table and named in a note instead.
PSEUDO_OPERATIONS: dict[str, str] = {
    "/real-time": "a placeholder that documents the event system's shared parameters",
    "/rest-error-handling": "documents error responses common to every endpoint",
    "/zulip-outgoing-webhook": "describes what Zulip sends to an outgoing-webhook bot",
}

# Operations hubbub serves on purpose although Zulip's document has no such method + path:
# (method, hubbub path) -> why it exists. Every registered endpoint that does not map to a
# documented operation must be listed here (tests/test_api_coverage.py checks it).
HUBBUB_EXTENSIONS: dict[tuple[str, str], str] = {
    ("PATCH", "/realm/profile_fields/{field_id:int}"): "Zulip's edit of a custom profile "
    "field, which its document omits",
    ("DELETE", "/realm/profile_fields/{field_id:int}"): "Zulip's deletion of a custom "
    "profile field, which its document omits",
    ("PATCH", "/users/me/profile_data"): "Zulip's endpoint for setting one's own custom "
    "profile field values, which its document omits",
    ("DELETE", "/users/me/profile_data"): "Zulip's endpoint for clearing one's own custom "
    "profile field values, which its document omits",
    ("PATCH", "/settings/display"): "Zulip's deprecated alias of PATCH /settings",
    ("PATCH", "/settings/notifications"): "Zulip's deprecated alias of PATCH /settings "
    "(the official client's update_notification_settings)",
    ("POST", "/users/me/apns_device_token"): "Zulip's iOS push device registration, which "
    "the mobile app sends and its document omits",
    ("DELETE", "/users/me/apns_device_token"): "Zulip's iOS push device removal, which its "
    "document omits",
    ("POST", "/users/me/android_gcm_reg_id"): "Zulip's Android push device registration, "
    "which the mobile app sends and its document omits",
    ("DELETE", "/users/me/android_gcm_reg_id"): "Zulip's Android push device removal, which "
    "its document omits",
    ("POST", "/submessage"): "Zulip's widget data endpoint (polls, to-do lists), which its "
    "web and mobile apps send and its document omits",
    ("POST", "/users/me/api_key/regenerate"): "Zulip's API key rotation (its web app's "
    '"Generate new API key"), which its document omits',
    ("GET", "/bot_storage"): "Zulip's bot state store, which zulip-bots' stateful bots read "
    "(the official client's get_storage) and its document omits",
    ("PUT", "/bot_storage"): "Zulip's bot state store, which zulip-bots' stateful bots write "
    "(the official client's update_storage) and its document omits",
    ("DELETE", "/bot_storage"): "Zulip's removal of bot state entries, which its document omits",
    ("POST", "/external/{integration}"): "Zulip's incoming webhooks (docs/integrations.md), "
    "which its document omits",
    ("GET", "/external/{integration}"): "Zulip's incoming webhooks, which it routes for every "
    "method",
}

STATUS_TESTED = "implemented + tested"
STATUS_IMPLEMENTED = "implemented"
STATUS_ABSENT = "absent"
NOT_PLANNED = "not planned"


@dataclass(frozen=True)
class IssueRule:
    """Absent operations whose path matches ``pattern`` (and method, if given) arrive with
    ``issue``."""

    issue: str
    area: str
    pattern: str
    methods: tuple[str, ...] = ()

    def matches(self, method: str, path: str) -> bool:
        if self.methods and method not in self.methods:
            return False
        return re.search(self.pattern, path) is not None


# The planned issues, tried in order; the first rule that matches wins.
ISSUE_RULES: tuple[IssueRule, ...] = (
    # In no issue's text yet: the stream email address (needs an email gateway hubbub
    # does not have).
    IssueRule(
        NOT_PLANNED,
        "stream email addresses",
        r"^/streams/\{[^}]+\}/email_address$",
    ),
    # Zulip 8.0's operations that Zulip 10.2 removed (and hubbub with it).
    IssueRule(
        "removed at feature level 294",
        "user group deletion (groups are deactivated instead)",
        r"^/user_groups/\{[^}]+\}$",
        ("DELETE",),
    ),
    IssueRule("issue 3", "event queues: register, poll, delete", r"^/(register|events)$"),
    IssueRule(
        "issue 7",
        "message edits, history, deletion, flags, reactions, read receipts, mark-as-read",
        r"^/(mark_[a-z_]+|submessage)$"
        r"|^/messages/flags(/|$)"
        r"|^/messages/\{[^}]+\}/(history|reactions|read_receipts)$",
    ),
    IssueRule(
        "issue 7",
        "message edits, history, deletion, flags, reactions, read receipts, mark-as-read",
        r"^/messages/\{[^}]+\}$",
        ("PATCH", "DELETE"),
    ),
    IssueRule(
        "issue 6",
        "messages: send, fetch, render, narrow matching",
        r"^/messages(/(render|matches_narrow|\{[^}]+\}))?$",
        ("GET", "POST"),
    ),
    IssueRule(
        "issue 8",
        "scheduled messages, uploads, attachments, mobile push",
        r"^/(scheduled_messages|user_uploads|attachments|mobile_push)(/|$)",
    ),
    IssueRule(
        "issue 4",
        "streams, subscriptions, topics, user topics, default streams",
        r"^/(streams|get_stream_id|user_topics|default_streams)(/|$)"
        r"|^/users/[^/]+/subscriptions(/|$)"
        r"|^/users/me/\{[^}]+\}/topics$",
    ),
    IssueRule(
        "issue 5",
        "organization and user settings, drafts, groups, profile fields, linkifiers, "
        "muted users, presence, status, alert words, typing",
        r"^/(realm|settings|drafts|user_groups|typing)(/|$)"
        r"|^/users/[^/]+/presence$"
        r"|^/users/me/(muted_users|status|alert_words)(/|$)",
    ),
)


def planned_issue(method: str, path: str) -> str:
    for rule in ISSUE_RULES:
        if rule.matches(method, path):
            return rule.issue
    return NOT_PLANNED


# ---------------------------------------------------------------------------------------
# Zulip's document and hubbub's routes


@dataclass(frozen=True)
class SpecOperation:
    method: str
    path: str
    operation_id: str
    # The feature level whose addition (tests/reference/additions) documents the operation;
    # None for an operation of Zulip 8.0's document.
    added_at: int | None = None


def load_spec(path: Path | None = None, additions_dir: Path = ADDITIONS_DIR) -> dict[str, Any]:
    """The document the tests validate against: the base at ``path`` plus the additions."""
    return load_document(path, additions_dir)


def spec_operations(spec: dict[str, Any]) -> list[SpecOperation]:
    """Every documented operation except the pseudo-operations, sorted by path and method."""
    operations = []
    for path, item in spec["paths"].items():
        if path in PSEUDO_OPERATIONS:
            continue
        for key, operation in item.items():
            method = key.upper()
            if method in HTTP_METHODS:
                operations.append(
                    SpecOperation(
                        method,
                        path,
                        operation.get("operationId") or "",
                        operation.get(ADDED_AT_LEVEL),
                    )
                )
    return sorted(operations, key=lambda op: (op.path, _METHOD_ORDER[op.method]))


@dataclass(frozen=True)
class HubbubEndpoint:
    method: str
    path: str  # hubbub's route template, relative to /api/v1, e.g. "/users/{user_id:int}"
    handler: str  # the endpoint function's name


def registered_endpoints() -> list[HubbubEndpoint]:
    """What hubbub serves: importing the route table registers every endpoint module."""
    import hubbub.api.routes  # noqa: F401  (imported for its side effect)
    from hubbub.api.endpoint import ENDPOINTS

    return sorted(
        {HubbubEndpoint(ep.method, ep.path, ep.func.__name__) for ep in ENDPOINTS},
        key=lambda ep: (ep.path, _METHOD_ORDER.get(ep.method, 99)),
    )


_PARAM_RE = re.compile(r"^\{([^}:]+)(?::([^}]+))?\}$")


@dataclass(frozen=True)
class Segment:
    """One ``/``-separated piece of a route template: a literal or a parameter."""

    text: str  # the literal text, or the parameter's name
    is_param: bool
    converter: str = "str"  # Starlette's converter: "str", "int", "path", ...


def parse_template(path: str) -> tuple[Segment, ...]:
    segments = []
    for part in path.strip("/").split("/"):
        found = _PARAM_RE.match(part)
        if found:
            segments.append(Segment(found.group(1), True, found.group(2) or "str"))
        else:
            segments.append(Segment(part, False))
    return tuple(segments)


def spec_path_of(template: str) -> str:
    """hubbub's ``/users/{user_id:int}`` is Zulip's ``/users/{user_id}``."""
    parts = [
        "{" + s.text + "}" if s.is_param else s.text for s in parse_template(template) if s.text
    ]
    return "/" + "/".join(parts)


def _shape(path: str) -> tuple[str | None, ...]:
    return tuple(None if s.is_param else s.text for s in parse_template(path))


def find_spec_operation(
    endpoint: HubbubEndpoint, operations: Sequence[SpecOperation]
) -> SpecOperation | None:
    """The documented operation a hubbub endpoint implements.

    The same method and path with converters removed; failing that, the only documented
    operation with the same method whose path has the same literals and parameter
    positions (hubbub may name a path parameter differently).
    """
    path = spec_path_of(endpoint.path)
    same_method = [op for op in operations if op.method == endpoint.method]
    for op in same_method:
        if op.path == path:
            return op
    shaped = [op for op in same_method if _shape(op.path) == _shape(endpoint.path)]
    return shaped[0] if len(shaped) == 1 else None


# ---------------------------------------------------------------------------------------
# API calls in the tests

# A stand-in for an f-string placeholder inside a path taken from the tests.
_HOLE = "\x00"
_CALL_METHODS = {name.lower(): name for name in HTTP_METHODS}


@dataclass(frozen=True)
class TestCall:
    method: str
    path: str  # relative to /api/v1; f-string placeholders are _HOLE
    holes: tuple[str, ...]  # the source text of each placeholder, in order
    location: str

    __test__ = False  # not a pytest class


def _literal_path(node: ast.expr) -> tuple[str, tuple[str, ...]] | None:
    """The text of a string or f-string literal, with placeholders marked; else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, ()
    if isinstance(node, ast.JoinedStr):
        text: list[str] = []
        holes: list[str] = []
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                text.append(part.value)
            elif isinstance(part, ast.FormattedValue):
                text.append(_HOLE)
                holes.append(ast.unparse(part.value))
            else:
                return None
        return "".join(text), tuple(holes)
    return None


def _argument(call: ast.Call, position: int, names: tuple[str, ...]) -> ast.expr | None:
    if len(call.args) > position and not any(
        isinstance(arg, ast.Starred) for arg in call.args[: position + 1]
    ):
        return call.args[position]
    for keyword in call.keywords:
        if keyword.arg in names:
            return keyword.value
    return None


def _call_from_node(call: ast.Call) -> tuple[str, ast.expr, bool] | None:
    """(method, path node, path may omit its leading slash) for an API-looking call."""
    if not isinstance(call.func, ast.Attribute):
        return None
    name = call.func.attr
    if name in _CALL_METHODS:
        path = _argument(call, 0, ("path", "url"))
        return (_CALL_METHODS[name], path, False) if path is not None else None
    if name == "request":
        method = _argument(call, 0, ("method",))
        path = _argument(call, 1, ("path", "url"))
        if isinstance(method, ast.Constant) and isinstance(method.value, str) and path:
            return method.value.upper(), path, False
        return None
    if name == "call_endpoint":  # the official zulip client; its default method is POST
        path = _argument(call, 0, ("url",))
        method = _argument(call, 1, ("method",))
        verb = "POST"
        if method is not None:
            if not (isinstance(method, ast.Constant) and isinstance(method.value, str)):
                return None
            verb = method.value.upper()
        return (verb, path, True) if path is not None else None
    return None


def _module_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level ``NAME = "literal"`` assignments, so ``client.post(PATH, ...)`` counts."""
    constants: dict[str, ast.expr] = {}
    for statement in tree.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and _literal_path(statement.value) is not None
        ):
            constants[statement.targets[0].id] = statement.value
    return constants


def calls_in_source(source: str, filename: str) -> list[TestCall]:
    calls = []
    tree = ast.parse(source, filename=filename)
    constants = _module_constants(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        found = _call_from_node(node)
        if found is None:
            continue
        method, path_node, relative_ok = found
        if isinstance(path_node, ast.Name) and path_node.id in constants:
            path_node = constants[path_node.id]
        literal = _literal_path(path_node)
        if literal is None or method not in HTTP_METHODS:
            continue
        path, holes = literal
        if path.startswith(API_PREFIX + "/"):
            path = path[len(API_PREFIX) :]
        elif relative_ok and not path.startswith("/"):
            path = "/" + path
        if not path.startswith("/"):
            continue  # dict.get("key") and the like
        path = path.split("?", 1)[0]
        kept_holes = holes[: path.count(_HOLE)]
        calls.append(TestCall(method, path, kept_holes, f"{filename}:{node.lineno}"))
    return calls


def test_calls(tests_dir: Path = TESTS_DIR) -> list[TestCall]:
    """Every API call written in ``tests_dir``, in file order."""
    calls: list[TestCall] = []
    if not tests_dir.is_dir():
        return calls
    for file in sorted(tests_dir.rglob("*.py")):
        name = file.relative_to(tests_dir.parent).as_posix()
        calls.extend(calls_in_source(file.read_text(encoding="utf-8"), name))
    return calls


_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _looks_like_int(source: str) -> bool:
    """Whether a placeholder's expression is most likely an id (an integer)."""
    if source.lstrip("-").isdigit():
        return True
    names = _IDENTIFIER_RE.findall(source)
    return bool(names) and (names[-1].lower().endswith("id") or names[-1] == "pk")


def _segment_fits(segment: Segment, value: str, holes: list[str]) -> tuple[bool, int]:
    """(does the concrete or placeholder ``value`` fit ``segment``, type agreement 0/1)."""
    if _HOLE in value:
        hole_sources = [holes.pop(0) for _ in range(value.count(_HOLE))]
        if not segment.is_param:
            return False, 0
        int_like = value == _HOLE and _looks_like_int(hole_sources[0])
        return True, int(int_like == (segment.converter == "int"))
    if not segment.is_param:
        return value == segment.text, 0
    if not value:
        return False, 0
    if segment.converter == "int":
        return value.isdigit(), 1
    return True, int(not value.isdigit())


def match_call(call: TestCall, endpoints: Sequence[HubbubEndpoint]) -> list[HubbubEndpoint]:
    """The endpoints a test call exercises.

    1. Same method (a HEAD call counts for GET), same number of segments; literal segments
       equal; a parameter takes any non-empty segment or placeholder (an ``int`` parameter
       takes digits or a placeholder only).
    2. Of those, the ones with the most literal segments win (as in the router, where
       ``/users/me`` beats ``/users/{email}``).
    3. If several remain, type agreement decides: digits, and placeholders whose expression
       ends in an identifier ending in ``id`` (``user.id``, ``stream_id``), agree with
       ``int`` parameters; everything else agrees with the other parameters.
    4. Endpoints still tied are all credited.
    """
    method = "GET" if call.method == "HEAD" else call.method
    values = call.path.strip("/").split("/")
    best: list[tuple[int, int, HubbubEndpoint]] = []
    for endpoint in endpoints:
        if endpoint.method != method:
            continue
        template = parse_template(endpoint.path)
        if len(template) != len(values):
            continue
        holes = list(call.holes)
        agreement = 0
        for segment, value in zip(template, values, strict=True):
            fits, agrees = _segment_fits(segment, value, holes)
            if not fits:
                break
            agreement += agrees
        else:
            literals = sum(not s.is_param for s in template)
            best.append((literals, agreement, endpoint))
    if not best:
        return []
    top = max((literals, agreement) for literals, agreement, _ in best)
    return [endpoint for literals, agreement, endpoint in best if (literals, agreement) == top]


def tested_endpoints(
    endpoints: Sequence[HubbubEndpoint], calls: Iterable[TestCall]
) -> set[HubbubEndpoint]:
    tested: set[HubbubEndpoint] = set()
    for call in calls:
        tested.update(match_call(call, endpoints))
    return tested


# ---------------------------------------------------------------------------------------
# The report


@dataclass(frozen=True)
class Row:
    operation: SpecOperation
    status: str
    issue: str
    handler: str


@dataclass(frozen=True)
class Coverage:
    rows: list[Row]
    # hubbub endpoints that map to no documented operation, with whether they are declared
    # in HUBBUB_EXTENSIONS.
    outside: list[tuple[HubbubEndpoint, bool]]

    def count(self, status: str) -> int:
        return sum(row.status == status for row in self.rows)


def build_coverage(
    operations: Sequence[SpecOperation],
    endpoints: Sequence[HubbubEndpoint],
    calls: Iterable[TestCall],
) -> Coverage:
    tested = tested_endpoints(endpoints, calls)
    implemented: dict[SpecOperation, list[HubbubEndpoint]] = {}
    outside = []
    for endpoint in endpoints:
        operation = find_spec_operation(endpoint, operations)
        if operation is None:
            declared = (endpoint.method, endpoint.path) in HUBBUB_EXTENSIONS
            outside.append((endpoint, declared))
        else:
            implemented.setdefault(operation, []).append(endpoint)
    rows = []
    for operation in operations:
        handlers = implemented.get(operation, [])
        if not handlers:
            status = STATUS_ABSENT
            issue = planned_issue(operation.method, operation.path)
        else:
            status = STATUS_TESTED if any(h in tested for h in handlers) else STATUS_IMPLEMENTED
            issue = ""
        handler = ", ".join(f"`{h.handler}`" for h in handlers)
        rows.append(Row(operation, status, issue, handler))
    return Coverage(rows, outside)


_HEADER = """\
# Zulip API coverage

<!-- Generated by tools/api_coverage.py; do not edit. Regenerate: python tools/api_coverage.py -->

Every operation (method + path) in Zulip 8.0's OpenAPI document (feature level 237), plus
the operations later feature levels added that `tests/reference/additions/` describes (their
*Zulip operationId* cell names the level), and what hubbub does with it. The table is
generated from three inputs only: Zulip's document as the tests read it (`tests/reference/`,
with the additions), the endpoints hubbub registers with `@endpoint`, and the API calls
written in `tests/`.
`python tools/api_coverage.py --check` (run by `tests/test_api_coverage.py`) fails when this
file no longer matches them, so regenerate it after adding an endpoint or a test.

**Status**

- **{tested}**: hubbub registers the method and path, and a test calls it.
- **{implemented}**: hubbub registers it, but no call to it was found in `tests/`.
- **{absent}**: hubbub does not serve it yet; the *Issue* column names the planned issue that
  brings it, or says "{not_planned}".

hubbub's route templates carry Starlette converters; they are compared with Zulip's paths
after dropping the converter (`/users/{{user_id:int}}` is `/users/{{user_id}}`).

**How "tested" is decided.** Every `*.py` file under `tests/` is parsed (not run). A call counts
when it is `<anything>.get/post/put/patch/delete/head(PATH, ...)`,
`<anything>.request("METHOD", PATH, ...)` or `<anything>.call_endpoint(url=PATH, method=...)`
and PATH is a string or f-string literal starting with `/` (`/api/v1` is dropped; a query
string is ignored). The call exercises the hubbub endpoint with the same method whose template
it fits: literal segments must be equal, and the template with the most literal segments wins
(`/users/me` over `/users/{{email}}`). An f-string placeholder is taken as an integer id when
its expression ends in a name ending in `id` (`{{user.id}}`, `{{stream_id}}`); that decides
between templates such as `/users/{{user_id:int}}` and `/users/{{email}}`. Calls through
helpers that build the path at run time (`API + path`) or through the zulip client's named
methods are not seen: such an endpoint shows as "{implemented}" until some test spells out
its path.
"""


def _summary(coverage: Coverage) -> str:
    total = len(coverage.rows)
    tested = coverage.count(STATUS_TESTED)
    implemented = coverage.count(STATUS_IMPLEMENTED)
    absent = coverage.count(STATUS_ABSENT)
    return (
        f"**Summary: {tested} implemented + tested / {implemented} implemented / "
        f"{absent} absent, of {total} operations.**"
    )


def _issue_table() -> list[str]:
    lines = ["| Issue | Brings |", "| --- | --- |"]
    areas: dict[str, list[str]] = {}
    for rule in ISSUE_RULES:
        if rule.area not in areas.setdefault(rule.issue, []):
            areas[rule.issue].append(rule.area)
    for issue in sorted(areas):
        lines.append(f"| {issue} | {'; '.join(areas[issue])} |")
    lines.append(f"| {NOT_PLANNED} | anything else |")
    return lines


def _operation_id_cell(op: SpecOperation) -> str:
    parts = [f"`{op.operation_id}`"] if op.operation_id else []
    if op.added_at is not None:
        parts.append(f"added at feature level {op.added_at}")
    return ", ".join(parts)


def render(coverage: Coverage) -> str:
    title, body = _HEADER.split("\n\n", 1)
    lines = [
        title,
        "",
        _summary(coverage),
        "",
        body.format(
            tested=STATUS_TESTED,
            implemented=STATUS_IMPLEMENTED,
            absent=STATUS_ABSENT,
            not_planned=NOT_PLANNED,
        ).rstrip(),
        "",
    ]
    lines += [
        "## Operations",
        "",
        "| Method | Path | Zulip operationId | Status in hubbub | Issue | hubbub handler |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in coverage.rows:
        op = row.operation
        lines.append(
            f"| {op.method} | `{op.path}` | {_operation_id_cell(op)} | {row.status} "
            f"| {row.issue} | {row.handler} |"
        )
    lines += ["", "## Planned issues", "", *_issue_table(), ""]
    lines += [
        "## Left out of the table",
        "",
        "Zulip's document also has these entries, which are not endpoints a client calls:",
        "",
    ]
    for path, why in sorted(PSEUDO_OPERATIONS.items()):
        lines.append(f"- `{path}`: {why}.")
    lines += ["", "## hubbub operations outside Zulip's document", ""]
    if not coverage.outside:
        lines.append("None: every hubbub endpoint implements a documented Zulip operation.")
    else:
        lines += [
            "| Method | Path | hubbub handler | Declared extension |",
            "| --- | --- | --- | --- |",
        ]
        for endpoint, declared in coverage.outside:
            note = HUBBUB_EXTENSIONS.get((endpoint.method, endpoint.path), "")
            state = f"yes: {note}" if declared else "**no** (add it to `HUBBUB_EXTENSIONS`)"
            lines.append(
                f"| {endpoint.method} | `{endpoint.path}` | `{endpoint.handler}` | {state} |"
            )
    return "\n".join(lines) + "\n"


def generate(
    spec_path: Path, tests_dir: Path = TESTS_DIR, additions_dir: Path = ADDITIONS_DIR
) -> str:
    operations = spec_operations(load_spec(spec_path, additions_dir))
    coverage = build_coverage(operations, registered_endpoints(), test_calls(tests_dir))
    return render(coverage)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the output file is out of date"
    )
    parser.add_argument(
        "--spec", type=Path, default=None, help="Zulip 8.0's OpenAPI document (YAML or JSON)"
    )
    parser.add_argument(
        "--additions", type=Path, default=ADDITIONS_DIR, help="the directory of additions"
    )
    parser.add_argument("--output", type=Path, default=OUTPUT, help="the Markdown file")
    args = parser.parse_args(argv)
    spec_path: Path = args.spec or base_path()
    additions_dir: Path = args.additions
    output: Path = args.output
    if not spec_path.is_file():
        print(f"api_coverage: no OpenAPI document at {spec_path}", file=sys.stderr)
        return 2
    text = generate(spec_path, additions_dir=additions_dir)
    current = output.read_text(encoding="utf-8") if output.is_file() else None
    if args.check:
        if current != text:
            print(
                f"api_coverage: {output} is out of date; run: python tools/api_coverage.py",
                file=sys.stderr,
            )
            return 1
        return 0
    if current != text:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
        print(f"wrote {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
