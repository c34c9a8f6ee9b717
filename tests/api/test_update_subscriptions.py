"""``PATCH /users/me/subscriptions``: additions and removals in one request and one
transaction, answered together (Zulip's ``update-subscriptions``)."""

from __future__ import annotations

from tests.helpers import TestEnv, assert_error, assert_success

PATH = "/users/me/subscriptions"


async def _subscribed_names(env: TestEnv, user: str) -> list[str]:
    body = assert_success(await env.client(user).get(PATH))
    return sorted(s["name"] for s in body["subscriptions"])


async def test_add_and_delete_in_one_request(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("hamlet", "Scotland")
    body = assert_success(
        await env.client("hamlet").patch(
            PATH,
            {
                "add": [{"name": "Verona", "description": "A fair city"}, {"name": "Denmark"}],
                "delete": ["Scotland"],
            },
        )
    )
    assert body["subscribed"] == {"hamlet@example.com": ["Verona"]}
    assert body["already_subscribed"] == {"hamlet@example.com": ["Denmark"]}
    assert body["removed"] == ["Scotland"] and body["not_removed"] == []
    assert await _subscribed_names(env, "hamlet") == ["Denmark", "Verona"]


async def test_only_one_side(env: TestEnv) -> None:
    await env.subscribe("othello", "Denmark")
    body = assert_success(await env.client("hamlet").patch(PATH, {"add": [{"name": "Denmark"}]}))
    assert body["subscribed"] == {"hamlet@example.com": ["Denmark"]}
    assert body["removed"] == [] and body["not_removed"] == []
    body = assert_success(await env.client("hamlet").patch(PATH, {"delete": ["Denmark"]}))
    assert body["subscribed"] == {} and body["removed"] == ["Denmark"]
    assert await _subscribed_names(env, "hamlet") == []


async def test_nothing_to_do(env: TestEnv) -> None:
    nothing: list[dict[str, list[str]]] = [{}, {"add": [], "delete": []}]
    for params in nothing:
        assert_error(
            await env.client("hamlet").patch(PATH, params),
            'Nothing to do. Specify at least one of "add" or "delete".',
        )


async def test_a_failing_removal_undoes_the_addition(env: TestEnv) -> None:
    assert_error(
        await env.client("hamlet").patch(
            PATH, {"add": [{"name": "Brand new"}], "delete": ["No such stream"]}
        ),
        "Stream 'No such stream' does not exist",
        code="STREAM_DOES_NOT_EXIST",
    )
    assert await _subscribed_names(env, "hamlet") == []
    body = assert_success(await env.client("hamlet").get("/streams"))
    assert "Brand new" not in {s["name"] for s in body["streams"]}


async def test_bad_add_entries(env: TestEnv) -> None:
    assert_error(
        await env.client("hamlet").patch(PATH, {"add": ["Denmark"]}), "add[0] is not a dict"
    )
    assert_error(
        await env.client("hamlet").patch(PATH, {"add": [{"description": "x"}]}),
        "add[0] key is missing: name",
    )
