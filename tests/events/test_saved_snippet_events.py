"""``saved_snippets`` events (feature levels 297 and 368): applying them to old state gives
the new state; only the snippet's owner hears of them."""

from __future__ import annotations

from tests.events.verify import call_api, register, verify_action
from tests.helpers import TestEnv, assert_success, without_id

URL = "/saved_snippets"


async def test_register_state(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    assert (await register(env, hamlet))["saved_snippets"] == []
    assert_success(await env.client("hamlet").post(URL, {"title": "A", "content": "B"}))
    state = await register(env, hamlet, fetch_event_types=["saved_snippets"])
    [snippet] = state["saved_snippets"]
    assert (snippet["title"], snippet["content"]) == ("A", "B")
    assert isinstance(snippet["date_created"], int)
    assert "saved_snippets" not in await register(env, hamlet, fetch_event_types=["drafts"])
    # Nobody else's state shows it.
    assert (await register(env, env.users["othello"]))["saved_snippets"] == []


async def test_add_update_remove(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    events = await verify_action(
        env,
        hamlet,
        call_api(env, "hamlet", "post", URL, {"title": " Hi ", "content": "Hello"}),
        num_events=1,
    )
    snippet = events[0]["saved_snippet"]
    assert without_id(events[0]) == {
        "type": "saved_snippets",
        "op": "add",
        "saved_snippet": {
            "id": snippet["id"],
            "title": "Hi",
            "content": "Hello",
            "date_created": snippet["date_created"],
        },
    }
    snippet_id = snippet["id"]
    events = await verify_action(
        env,
        hamlet,
        call_api(env, "hamlet", "patch", f"{URL}/{snippet_id}", {"content": "Hey"}),
        num_events=1,
    )
    assert without_id(events[0]) == {
        "type": "saved_snippets",
        "op": "update",
        "saved_snippet": {**snippet, "content": "Hey"},
    }
    # An edit that changes nothing still tells the client, as Zulip's does; one naming
    # nothing sends nothing.
    await verify_action(
        env,
        hamlet,
        call_api(env, "hamlet", "patch", f"{URL}/{snippet_id}", {"title": "Hi"}),
        num_events=1,
    )
    await verify_action(
        env, hamlet, call_api(env, "hamlet", "patch", f"{URL}/{snippet_id}", {}), num_events=0
    )
    events = await verify_action(
        env, hamlet, call_api(env, "hamlet", "delete", f"{URL}/{snippet_id}"), num_events=1
    )
    assert without_id(events[0]) == {
        "type": "saved_snippets",
        "op": "remove",
        "saved_snippet_id": snippet_id,
    }


async def test_several_snippets_stay_in_order(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    ids = []
    for n in range(3):
        body = assert_success(
            await env.client("hamlet").post(URL, {"title": f"T{n}", "content": f"C{n}"})
        )
        ids.append(body["saved_snippet_id"])

    async def shuffle() -> None:
        client = env.client("hamlet")
        assert_success(await client.patch(f"{URL}/{ids[2]}", {"title": "Last"}))
        assert_success(await client.delete(f"{URL}/{ids[0]}"))
        assert_success(await client.post(URL, {"title": "New", "content": "N"}))
        assert_success(await client.patch(f"{URL}/{ids[1]}", {"content": "Changed"}))

    events = await verify_action(env, hamlet, shuffle, num_events=4)
    assert [(e["type"], e["op"]) for e in events] == [
        ("saved_snippets", "update"),
        ("saved_snippets", "remove"),
        ("saved_snippets", "add"),
        ("saved_snippets", "update"),
    ]


async def test_others_hear_nothing(env: TestEnv) -> None:
    body = assert_success(await env.client("hamlet").post(URL, {"title": "T", "content": "C"}))
    snippet_id = body["saved_snippet_id"]
    for user in ("othello", "iago"):
        await verify_action(
            env,
            env.users[user],
            call_api(env, "hamlet", "patch", f"{URL}/{snippet_id}", {"title": user}),
            num_events=0,
        )
    await verify_action(
        env,
        env.users["othello"],
        call_api(env, "hamlet", "delete", f"{URL}/{snippet_id}"),
        num_events=0,
    )
