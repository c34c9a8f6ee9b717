"""``/realm/filters`` and ``/realm/linkifiers``: adding, listing, changing, removing and
reordering linkifiers, with Zulip 8.0's validation and error texts."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.actions.linkifiers import url_template_is_valid
from hubbub.db.tables import realm_linkifier
from tests.helpers import TestEnv, assert_error, assert_success

ISSUE = {"pattern": "#(?P<id>[0-9]+)", "url_template": "https://github.com/zulip/zulip/issues/{id}"}


async def _add(env: TestEnv, data: dict[str, Any], user: str = "iago") -> Any:
    return await env.client(user).post("/realm/filters", data)


async def _listed(env: TestEnv, user: str = "hamlet") -> list[dict[str, Any]]:
    body = assert_success(await env.client(user).get("/realm/linkifiers"))
    return body["linkifiers"]  # type: ignore[no-any-return]


async def _rows(env: TestEnv) -> list[tuple[int, int, str, str, int]]:
    async with env.services.db.read() as conn:
        rows = await conn.execute(sa.select(realm_linkifier).order_by(realm_linkifier.c.id))
        return [(r.id, r.realm_id, r.pattern, r.url_template, r.order) for r in rows]


async def test_add_list_update_remove(env: TestEnv) -> None:
    assert await _listed(env) == []
    first = assert_success(await _add(env, ISSUE))["id"]
    assert await _listed(env) == [{**ISSUE, "id": first}]
    # Fields are stripped.
    second = assert_success(
        await _add(
            env,
            {
                "pattern": "  (?P<org>[a-z]+)/(?P<repo>[a-z]+)#(?P<id>[0-9]+) ",
                "url_template": " https://github.com/{org}/{repo}/issues/{id}\n",
            },
        )
    )["id"]
    assert [item["id"] for item in await _listed(env)] == [first, second]
    assert (await _listed(env))[1]["pattern"] == "(?P<org>[a-z]+)/(?P<repo>[a-z]+)#(?P<id>[0-9]+)"
    assert (await _listed(env, "polonius"))[1]["url_template"] == (
        "https://github.com/{org}/{repo}/issues/{id}"
    )

    changed = {"pattern": " #(?P<id>[0-9a-f]+) ", "url_template": "https://example.com/{?id}"}
    assert_success(await env.client("desdemona").patch(f"/realm/filters/{first}", changed))
    assert (await _listed(env))[0] == {
        "pattern": "#(?P<id>[0-9a-f]+)",
        "url_template": "https://example.com/{?id}",
        "id": first,
    }
    # A linkifier may be saved again with its own pattern.
    assert_success(await env.client("iago").patch(f"/realm/filters/{first}", changed))

    assert_success(await env.client("iago").delete(f"/realm/filters/{first}"))
    assert [item["id"] for item in await _listed(env)] == [second]


async def test_rfc6570_templates(env: TestEnv) -> None:
    data = {
        "pattern": (
            r"FOO_(?P<id>[a-f]{5});(?P<zone>[a-f]);(?P<domain>[a-z]+);(?P<location>[a-z]+);"
            r"(?P<name>[a-z]{2,8});(?P<chapter>[0-9]{2,3});(?P<fragment>[a-z]{2,8})"
        ),
        "url_template": (
            "https://zone_{zone}{.domain}.net/ticket{/location}{/id}{?name,chapter}{#fragment:5}"
        ),
    }
    assert_success(await _add(env, data))
    # A template without variables suits a pattern without groups.
    assert_success(await _add(env, {"pattern": "3#123", "url_template": "https://example.com"}))
    assert_success(
        await _add(
            env, {"pattern": r"ZUL-URL-(?P<id>\d+)", "url_template": "https://e.com/%ba/{id}"}
        )
    )


@pytest.mark.parametrize(
    "template",
    [
        "https://example.com/",
        "https://example.com/foo[bar]",
        "https://example.com/{foo}{bars}",
        "https://example.com/%%(foo)s",
        "https://example.com{/foo,bar,baz}",
        "https://example.com/{?foo*}",
        "https://example.com/{+foo,bar}",
        "https://chat{.domain}.com/{#foo}",
        "https://example.com/{foo.bar}/{%20x}/{y:9999}",
        "$not_a_url$",
        "",
    ],
)
def test_valid_templates(template: str) -> None:
    assert url_template_is_valid(template)


@pytest.mark.parametrize(
    "template",
    [
        "https://example.com/{foo",
        "https://example.com/{{}",
        "https://example.com/{//foo}",
        "https://example.com/{bar++}",
        "https://example.com/{}",
        "https://example.com/foo}",
        "https://example.com/{=foo}",
        "https://example.com/{foo:0}",
        "https://example.com/{foo:10000}",
        "https://example.com/{foo..bar}",
        "https://example.com/{foo,}",
    ],
)
def test_invalid_templates(template: str) -> None:
    assert not url_template_is_valid(template)


@pytest.mark.parametrize(
    ("pattern", "template", "msg", "errors"),
    [
        (
            "",
            "https://realm.com/my_realm_filter/{id}",
            "This field cannot be blank.",
            {
                "pattern": ["This field cannot be blank."],
                "__all__": ["Group 'id' in URL template is not present in linkifier pattern."],
            },
        ),
        (
            "(foo",
            "https://realm.com/my_realm_filter/{id}",
            "Bad regular expression: missing ): (foo",
            None,
        ),
        (
            r"ZUL-(?P<id>\d????)",
            "https://realm.com/my_realm_filter/{id}",
            "Bad regular expression: bad repetition operator: ????",
            None,
        ),
        # RE2 refuses what can take exponential time or needs backtracking.
        (r"(a)\1", "https://e.com", r"Bad regular expression: invalid escape sequence: \1", None),
        (r"(?<=a)b", "https://e.com", "Bad regular expression: invalid perl operator: (?<=", None),
        (
            r"ZUL-(?P<id>\d+)",
            "$fgfg",
            "Group 'id' in linkifier pattern is not present in URL template.",
            None,
        ),
        (
            r"ZUL-(?P<id>\d+)",
            "https://realm.com/my_realm_filter/{hello}",
            "Group 'hello' in URL template is not present in linkifier pattern.",
            None,
        ),
        (
            r"ZUL-(?P<id>\d+)-(?P<hello>\d+)-(?P<world>\d+)",
            "https://realm.com/my_realm_filter/{hello}",
            "Group 'id' in linkifier pattern is not present in URL template.",
            None,
        ),
        (
            r"#(?P<id>[123])",
            "{id",
            "Invalid URL template.",
            {"url_template": ["Invalid URL template."]},
        ),
        (
            r"#(?P<id>[123])",
            "   ",
            "This field cannot be blank.",
            {
                "url_template": ["This field cannot be blank."],
                "__all__": ["Group 'id' in linkifier pattern is not present in URL template."],
            },
        ),
    ],
)
async def test_invalid_linkifiers(
    env: TestEnv, pattern: str, template: str, msg: str, errors: dict[str, list[str]] | None
) -> None:
    existing = assert_success(await _add(env, ISSUE))["id"]
    before = await _rows(env)
    data = {"pattern": pattern, "url_template": template}
    body = assert_error(await _add(env, data), msg)
    assert body["errors"] == (errors or {"__all__": [msg]})
    body = assert_error(await env.client("iago").patch(f"/realm/filters/{existing}", data), msg)
    assert body["errors"] == (errors or {"__all__": [msg]})
    assert await _rows(env) == before


async def test_duplicate_pattern(env: TestEnv) -> None:
    first = assert_success(await _add(env, ISSUE))["id"]
    second = assert_success(
        await _add(env, {"pattern": "PR (?P<id>[0-9]+)", "url_template": "https://pr/{id}"})
    )["id"]
    before = await _rows(env)
    msg = "Realm filter with this Realm and Pattern already exists."
    body = assert_error(await _add(env, {**ISSUE, "pattern": f" {ISSUE['pattern']}"}), msg)
    assert body["errors"] == {"__all__": [msg]}
    assert_error(await env.client("iago").patch(f"/realm/filters/{second}", ISSUE), msg)
    assert await _rows(env) == before
    # Patterns are compared exactly, and per realm.
    assert_success(await _add(env, {**ISSUE, "pattern": "#(?P<ID>[0-9]+)", "url_template": "{ID}"}))
    assert first in [item["id"] for item in await _listed(env)]


async def test_missing_and_malformed_arguments(env: TestEnv) -> None:
    assert_error(
        await _add(env, {"pattern": "x"}),
        "Missing 'url_template' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert_error(
        await _add(env, {"url_template": "x"}),
        "Missing 'pattern' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert_error(
        await env.client("iago").patch("/realm/linkifiers", {}),
        "Missing 'ordered_linkifier_ids' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert_error(
        await env.client("iago").patch("/realm/linkifiers", {"ordered_linkifier_ids": "[1,"}),
        "ordered_linkifier_ids is not valid JSON",
    )
    assert_error(
        await env.client("iago").patch("/realm/linkifiers", {"ordered_linkifier_ids": ["a"]}),
        "ordered_linkifier_ids[0] is not an integer",
    )
    assert await _rows(env) == []


async def test_unknown_linkifier(env: TestEnv) -> None:
    mine = assert_success(await _add(env, ISSUE))["id"]
    other_realm = await env.create_realm("zephyr", "Zephyr")
    async with env.services.db.write() as conn:
        result = await conn.execute(
            sa.insert(realm_linkifier).values(
                realm_id=other_realm.id, pattern="x", url_template="https://x", order=0
            )
        )
        theirs = int(result.inserted_primary_key[0])  # type: ignore[index]
    before = await _rows(env)
    for target in (mine + 1000, theirs):
        assert_error(
            await env.client("iago").patch(f"/realm/filters/{target}", ISSUE),
            "Linkifier not found.",
        )
        assert_error(
            await env.client("iago").delete(f"/realm/filters/{target}"), "Linkifier not found."
        )
    # Another realm's linkifiers are neither listed nor reorderable here.
    assert [item["id"] for item in await _listed(env)] == [mine]
    assert_error(
        await env.client("iago").patch(
            "/realm/linkifiers", {"ordered_linkifier_ids": [theirs, mine]}
        ),
        "The ordered list must enumerate all existing linkifiers exactly once",
    )
    assert await _rows(env) == before


@pytest.mark.parametrize("user", ["shiva", "hamlet", "polonius"])
async def test_administrators_only(env: TestEnv, user: str) -> None:
    existing = assert_success(await _add(env, ISSUE))["id"]
    before = await _rows(env)
    msg = "Must be an organization administrator"
    client = env.client(user)
    other = {"pattern": "x(?P<id>y)", "url_template": "https://x/{id}"}
    assert_error(await client.post("/realm/filters", other), msg, code="UNAUTHORIZED_PRINCIPAL")
    assert_error(
        await client.patch(f"/realm/filters/{existing}", other), msg, code="UNAUTHORIZED_PRINCIPAL"
    )
    assert_error(
        await client.delete(f"/realm/filters/{existing}"), msg, code="UNAUTHORIZED_PRINCIPAL"
    )
    assert_error(
        await client.patch("/realm/linkifiers", {"ordered_linkifier_ids": [existing]}),
        msg,
        code="UNAUTHORIZED_PRINCIPAL",
    )
    assert await _rows(env) == before
    # Everyone can read them.
    assert len(await _listed(env, user)) == 1


async def test_reorder(env: TestEnv) -> None:
    admin = env.client("iago")
    # Nothing to order: an empty list is accepted.
    assert_success(await admin.patch("/realm/linkifiers", {"ordered_linkifier_ids": []}))
    ids = []
    for n in (1, 2, 3):
        data = {"pattern": f"{n}#(?P<id>[123])", "url_template": f"https://filter.com/{n}/{{id}}"}
        ids.append(assert_success(await _add(env, data))["id"])
    assert [row[4] for row in await _rows(env)] == [0, 1, 2]
    assert [item["id"] for item in await _listed(env)] == ids

    new_order = [ids[2], ids[0], ids[1]]
    assert_success(await admin.patch("/realm/linkifiers", {"ordered_linkifier_ids": new_order}))
    assert [item["id"] for item in await _listed(env)] == new_order

    # A new linkifier comes last; removing one keeps the others' order.
    added = assert_success(await _add(env, {"pattern": "3#123", "url_template": "https://e.com"}))
    new_order.append(added["id"])
    assert [item["id"] for item in await _listed(env)] == new_order
    assert_success(await admin.delete(f"/realm/filters/{new_order[1]}"))
    deleted = new_order.pop(1)
    assert [item["id"] for item in await _listed(env)] == new_order

    before = await _rows(env)
    for bad, msg in [
        (
            [deleted, *new_order],
            "The ordered list must enumerate all existing linkifiers exactly once",
        ),
        (new_order[:2], "The ordered list must enumerate all existing linkifiers exactly once"),
        ([], "The ordered list must enumerate all existing linkifiers exactly once"),
        ([*new_order, new_order[0]], "The ordered list must not contain duplicated linkifiers"),
    ]:
        assert_error(await admin.patch("/realm/linkifiers", {"ordered_linkifier_ids": bad}), msg)
    assert await _rows(env) == before


async def test_ties_in_order_fall_back_to_creation(env: TestEnv) -> None:
    ids = [
        assert_success(await _add(env, {"pattern": f"{n}", "url_template": "https://e.com"}))["id"]
        for n in range(3)
    ]
    async with env.services.db.write() as conn:
        await conn.execute(sa.update(realm_linkifier).values(order=0))
    assert [item["id"] for item in await _listed(env)] == ids


async def test_register_state_needs_capability(env: TestEnv) -> None:
    linkifier_id = assert_success(await _add(env, ISSUE))["id"]
    client = env.client("hamlet")
    fetch = ["realm_linkifiers", "realm_filters"]
    state = assert_success(
        await client.post(
            "/register",
            {"fetch_event_types": fetch, "client_capabilities": {"linkifier_url_template": True}},
        )
    )
    assert state["realm_linkifiers"] == [{**ISSUE, "id": linkifier_id}]
    # Legacy key: always empty since feature level 176.
    assert state["realm_filters"] == []
    # Without the capability the templates are withheld (feature level 176).
    state = assert_success(await client.post("/register", {"fetch_event_types": fetch}))
    assert state["realm_linkifiers"] == []
    assert state["realm_filters"] == []
    state = assert_success(await client.post("/register", {"fetch_event_types": ["realm"]}))
    assert "realm_linkifiers" not in state and "realm_filters" not in state
