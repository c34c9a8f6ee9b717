"""``/realm/playgrounds``: adding and removing code playgrounds, with Zulip 10.2's
validation and error texts, and their ``/register`` state."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.db.tables import realm_playground
from tests.helpers import TestEnv, assert_error, assert_success

PYTHON = {
    "name": "Python playground",
    "pygments_language": "Python",
    "url_template": "https://python.example.com?code={code}",
}


async def _add(env: TestEnv, data: dict[str, Any], user: str = "iago") -> Any:
    return await env.client(user).post("/realm/playgrounds", data)


async def _listed(env: TestEnv, user: str = "hamlet") -> list[dict[str, Any]]:
    body = assert_success(
        await env.client(user).post("/register", {"fetch_event_types": ["realm_playgrounds"]})
    )
    return body["realm_playgrounds"]  # type: ignore[no-any-return]


async def _rows(env: TestEnv) -> list[tuple[int, int, str, str, str]]:
    async with env.services.db.read() as conn:
        rows = await conn.execute(sa.select(realm_playground).order_by(realm_playground.c.id))
        return [(r.id, r.realm_id, r.name, r.pygments_language, r.url_template) for r in rows]


async def test_add_list_remove(env: TestEnv) -> None:
    assert await _listed(env) == []
    first = assert_success(await _add(env, PYTHON))["id"]
    assert await _listed(env) == [{**PYTHON, "id": first}]
    # Fields are stripped; several playgrounds may serve one language.
    second = assert_success(
        await _add(
            env,
            {
                "name": "  Python playground 2 ",
                "pygments_language": " Python\n",
                "url_template": "\thttps://py2.example.com/{?code} ",
            },
            user="desdemona",
        )
    )["id"]
    assert await _listed(env, "polonius") == [
        {**PYTHON, "id": first},
        {
            "id": second,
            "name": "Python playground 2",
            "pygments_language": "Python",
            "url_template": "https://py2.example.com/{?code}",
        },
    ]
    assert_success(await env.client("iago").delete(f"/realm/playgrounds/{first}"))
    assert [p["id"] for p in await _listed(env)] == [second]
    assert [row[0] for row in await _rows(env)] == [second]


@pytest.mark.parametrize(
    "template",
    [
        "https://e.com/{code}",
        "https://e.com/{+code}",
        "https://e.com{/code}",
        "https://e.com/?x=1{&code}",
        "https://e.com/{#code}",
        "https://e.com/{code:20}",
        "https://e.com/{code}/{code}",
        "$not_a_url${code}",
    ],
)
async def test_valid_templates(env: TestEnv, template: str) -> None:
    assert_success(await _add(env, {**PYTHON, "url_template": template}))


@pytest.mark.parametrize(
    "language", ["C++", "C#", "Objective-C", "Emacs Lisp", "ABAP/4", "x.y_z", "a,b", "", " "]
)
async def test_language_characters_allowed(env: TestEnv, language: str) -> None:
    # Anything in Zulip's character class passes that check; blank ones then fail as blank.
    response = await _add(env, {**PYTHON, "pygments_language": language})
    if language.strip():
        assert_success(response)
    else:
        body = assert_error(response, "This field cannot be blank.")
        assert body["errors"] == {"pygments_language": ["This field cannot be blank."]}


@pytest.mark.parametrize(
    ("data", "msg", "errors"),
    [
        (
            {**PYTHON, "url_template": "https://template.com{?test,code}"},
            '"code" should be the only variable present in the URL template',
            None,
        ),
        (
            {**PYTHON, "url_template": "https://template.com?test={test"},
            "Invalid URL template.",
            {"url_template": ["Invalid URL template."]},
        ),
        (
            {**PYTHON, "url_template": "https://template.com{?test}"},
            'Missing the required variable "code" in the URL template',
            None,
        ),
        (
            {**PYTHON, "url_template": "https://template.com"},
            'Missing the required variable "code" in the URL template',
            None,
        ),
        (
            {**PYTHON, "url_template": "  "},
            "This field cannot be blank.",
            {
                "url_template": ["This field cannot be blank."],
                "__all__": ['Missing the required variable "code" in the URL template'],
            },
        ),
        (
            {**PYTHON, "name": " "},
            "This field cannot be blank.",
            {"name": ["This field cannot be blank."]},
        ),
        (
            # Fields are reported in the model's order: url_template, name, language.
            {"name": "", "pygments_language": "", "url_template": "{x"},
            "Invalid URL template.",
            {
                "url_template": ["Invalid URL template."],
                "name": ["This field cannot be blank."],
                "pygments_language": ["This field cannot be blank."],
            },
        ),
    ],
)
async def test_invalid_playgrounds(
    env: TestEnv, data: dict[str, str], msg: str, errors: dict[str, list[str]] | None
) -> None:
    before = await _rows(env)
    body = assert_error(await _add(env, data), msg)
    assert body["errors"] == (errors or {"__all__": [msg]})
    assert await _rows(env) == before


@pytest.mark.parametrize("language", ["a$b$c", "Python!", "tab\there", "ü"])
async def test_invalid_language_characters(env: TestEnv, language: str) -> None:
    # Checked before the model, so without the ``errors`` field.
    body = assert_error(
        await _add(env, {**PYTHON, "pygments_language": language}),
        "Invalid characters in pygments language",
    )
    assert "errors" not in body
    assert await _rows(env) == []


async def test_lengths_and_null_bytes(env: TestEnv) -> None:
    assert_error(
        await _add(env, {**PYTHON, "pygments_language": "x" * 41}),
        "pygments_language is too long (limit: 40 characters)",
    )
    assert_error(
        await _add(env, {**PYTHON, "name": "n" * 61}), "name is too long (limit: 60 characters)"
    )
    assert_error(await _add(env, {**PYTHON, "name": "a\x00b"}), "name must not contain null bytes")
    assert_error(
        await _add(env, {**PYTHON, "url_template": "https://e.com/\x00{code}"}),
        "url_template must not contain null bytes",
    )
    assert await _rows(env) == []
    assert_success(await _add(env, {**PYTHON, "pygments_language": "x" * 40, "name": "n" * 60}))


async def test_duplicate_playground(env: TestEnv) -> None:
    first = assert_success(await _add(env, PYTHON))["id"]
    before = await _rows(env)
    msg = "Realm playground with this Realm, Pygments language and Name already exists."
    body = assert_error(await _add(env, {**PYTHON, "name": f" {PYTHON['name']} "}), msg)
    assert body["errors"] == {"__all__": [msg]}
    # Other problems come first, and go with it into ``__all__``.
    body = assert_error(
        await _add(env, {**PYTHON, "url_template": "https://e.com/{x}"}),
        'Missing the required variable "code" in the URL template',
    )
    assert body["errors"] == {
        "__all__": ['Missing the required variable "code" in the URL template', msg]
    }
    assert await _rows(env) == before
    # Language and name are compared exactly, and per realm.
    assert_success(await _add(env, {**PYTHON, "pygments_language": "python"}))
    assert_success(await _add(env, {**PYTHON, "name": "Python Playground"}))
    # Once the first belongs to another realm, this one may have its like again.
    other_realm = await env.create_realm("zephyr", "Zephyr")
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(realm_playground)
            .where(realm_playground.c.id == first)
            .values(realm_id=other_realm.id)
        )
    assert_success(await _add(env, PYTHON))


async def test_missing_and_malformed_arguments(env: TestEnv) -> None:
    for missing in ("name", "url_template", "pygments_language"):
        data = {k: v for k, v in PYTHON.items() if k != missing}
        assert_error(
            await _add(env, data), f"Missing '{missing}' argument", code="REQUEST_VARIABLE_MISSING"
        )
    assert await _rows(env) == []
    # The legacy url_prefix (before feature level 196) is not a parameter any more.
    body = assert_success(await _add(env, {**PYTHON, "url_prefix": "https://e.com"}))
    assert body["ignored_parameters_unsupported"] == ["url_prefix"]


async def test_unknown_playground(env: TestEnv) -> None:
    mine = assert_success(await _add(env, PYTHON))["id"]
    other_realm = await env.create_realm("zephyr", "Zephyr")
    async with env.services.db.write() as conn:
        result = await conn.execute(
            sa.insert(realm_playground).values(
                realm_id=other_realm.id,
                name="x",
                pygments_language="x",
                url_template="https://x/{code}",
            )
        )
        theirs = int(result.inserted_primary_key[0])  # type: ignore[index]
    before = await _rows(env)
    for target in (mine + 1000, theirs):
        assert_error(
            await env.client("iago").delete(f"/realm/playgrounds/{target}"), "Invalid playground"
        )
    assert await _rows(env) == before
    assert [p["id"] for p in await _listed(env)] == [mine]


@pytest.mark.parametrize("user", ["shiva", "hamlet", "polonius"])
async def test_administrators_only(env: TestEnv, user: str) -> None:
    existing = assert_success(await _add(env, PYTHON))["id"]
    before = await _rows(env)
    msg = "Must be an organization administrator"
    client = env.client(user)
    other = {**PYTHON, "name": "Other"}
    assert_error(await client.post("/realm/playgrounds", other), msg, code="UNAUTHORIZED_PRINCIPAL")
    assert_error(
        await client.delete(f"/realm/playgrounds/{existing}"), msg, code="UNAUTHORIZED_PRINCIPAL"
    )
    assert await _rows(env) == before
    # Everyone can read them.
    assert len(await _listed(env, user)) == 1


async def test_register_state(env: TestEnv) -> None:
    playground_id = assert_success(await _add(env, PYTHON))["id"]
    client = env.client("othello")
    state = assert_success(await client.post("/register", {}))
    assert state["realm_playgrounds"] == [{**PYTHON, "id": playground_id}]
    state = assert_success(await client.post("/register", {"fetch_event_types": ["realm"]}))
    assert "realm_playgrounds" not in state
