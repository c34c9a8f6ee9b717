"""``/saved_snippets`` (feature levels 297 and 368): a user's own reusable message texts,
with Zulip 10.2's limits and error texts; a failed request changes nothing."""

from __future__ import annotations

from typing import Any

from tests.helpers import TestEnv, assert_error, assert_success

URL = "/saved_snippets"
NOT_FOUND = "Saved snippet does not exist."


async def _snippets(env: TestEnv, user: str = "hamlet") -> list[dict[str, Any]]:
    body = assert_success(await env.client(user).get(URL))
    return list(body["saved_snippets"])


async def _create(env: TestEnv, title: str, content: str, user: str = "hamlet") -> int:
    body = assert_success(await env.client(user).post(URL, {"title": title, "content": content}))
    return int(body["saved_snippet_id"])


async def test_create_list_edit_delete(env: TestEnv) -> None:
    assert await _snippets(env) == []
    now = int(env.services.clock.now())
    first = await _create(env, "  Greeting ", "\n Hello **there**!\n")
    second = await _create(env, "Sign-off", "Cheers")
    snippets = await _snippets(env)
    assert [s["id"] for s in snippets] == [first, second]
    # Surrounding whitespace goes; the time is whole seconds.
    assert snippets[0] == {
        "id": first,
        "title": "Greeting",
        "content": "Hello **there**!",
        "date_created": snippets[0]["date_created"],
    }
    assert now <= snippets[0]["date_created"] <= int(env.services.clock.now())
    client = env.client("hamlet")
    assert_success(await client.patch(f"{URL}/{first}", {"content": " Hi "}))
    assert_success(await client.patch(f"{URL}/{second}", {"title": "Bye", "content": "Ciao"}))
    snippets = await _snippets(env)
    assert [(s["title"], s["content"]) for s in snippets] == [("Greeting", "Hi"), ("Bye", "Ciao")]
    # The creation time does not change with an edit.
    assert snippets[0]["date_created"] >= now
    assert_success(await client.delete(f"{URL}/{first}"))
    assert [s["id"] for s in await _snippets(env)] == [second]


async def test_each_user_sees_only_their_own(env: TestEnv) -> None:
    mine = await _create(env, "Mine", "Secret text")
    theirs = await _create(env, "Theirs", "Other text", user="othello")
    assert [s["id"] for s in await _snippets(env, "othello")] == [theirs]
    client = env.client("othello")
    assert_error(await client.patch(f"{URL}/{mine}", {"title": "Stolen"}), NOT_FOUND, status=404)
    assert_error(await client.delete(f"{URL}/{mine}"), NOT_FOUND, status=404)
    assert [s["title"] for s in await _snippets(env)] == ["Mine"]
    # Guests keep snippets too.
    await _create(env, "Guest", "Hello", user="polonius")
    assert [s["title"] for s in await _snippets(env, "polonius")] == ["Guest"]


async def test_create_errors_change_nothing(env: TestEnv) -> None:
    client = env.client("hamlet")
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"content": "x"}, "Missing 'title' argument", "REQUEST_VARIABLE_MISSING"),
        ({"title": "x"}, "Missing 'content' argument", "REQUEST_VARIABLE_MISSING"),
        ({"title": "   ", "content": "x"}, "title cannot be blank", "BAD_REQUEST"),
        ({"title": "x", "content": "\n \n"}, "content cannot be blank", "BAD_REQUEST"),
        (
            {"title": "t" * 61, "content": "x"},
            "title is too long (limit: 60 characters)",
            "BAD_REQUEST",
        ),
        (
            {"title": "x", "content": "c" * 10001},
            "content is too long (limit: 10000 characters)",
            "BAD_REQUEST",
        ),
        # The title is checked first.
        ({"title": "", "content": ""}, "title cannot be blank", "BAD_REQUEST"),
    ]
    for params, message, code in cases:
        assert_error(await client.post(URL, params), message, code=code)
    assert await _snippets(env) == []
    # The limits count what is left after stripping.
    await _create(env, " " + "t" * 60 + " ", "c" * 10000)
    assert [len(s["title"]) for s in await _snippets(env)] == [60]


async def test_edit_and_delete_errors_change_nothing(env: TestEnv) -> None:
    snippet = await _create(env, "Title", "Content")
    client = env.client("hamlet")
    assert_error(await client.patch(f"{URL}/{snippet}", {"title": " "}), "title cannot be blank")
    assert_error(
        await client.patch(f"{URL}/{snippet}", {"title": "ok", "content": "c" * 10001}),
        "content is too long (limit: 10000 characters)",
    )
    assert_error(await client.patch(f"{URL}/9999", {"title": "x"}), NOT_FOUND, status=404)
    assert_error(await client.delete(f"{URL}/9999"), NOT_FOUND, status=404)
    assert [(s["title"], s["content"]) for s in await _snippets(env)] == [("Title", "Content")]
    # An edit naming nothing to change succeeds without looking the snippet up, as Zulip's.
    assert_success(await client.patch(f"{URL}/9999", {}))
    body = assert_success(await client.patch(f"{URL}/{snippet}", {"name": "x"}))
    assert body["ignored_parameters_unsupported"] == ["name"]
    # A deleted snippet is gone for good.
    assert_success(await client.delete(f"{URL}/{snippet}"))
    assert_error(await client.delete(f"{URL}/{snippet}"), NOT_FOUND, status=404)
    assert await _snippets(env) == []
