"""``drafts`` events: applying them to old state gives the new state; only the draft's
owner hears of them; turning synchronization off empties the state without events."""

from __future__ import annotations

from typing import Any

from tests.events.verify import call_api, verify_action
from tests.helpers import TestEnv, assert_success, without_id


def _draft(**overrides: Any) -> dict[str, Any]:
    return {"type": "private", "to": [], "topic": "", "content": "Hello", **overrides}


async def _create(env: TestEnv, *drafts: dict[str, Any]) -> list[int]:
    body = assert_success(await env.client("hamlet").post("/drafts", {"drafts": list(drafts)}))
    return body["ids"]  # type: ignore[no-any-return]


async def test_add_update_remove(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    othello = env.users["othello"]
    await _create(env, _draft(timestamp=500))
    events = await verify_action(
        env,
        hamlet,
        call_api(
            env,
            "hamlet",
            "post",
            "/drafts",
            {"drafts": [_draft(to=[othello.id], timestamp=100), _draft(timestamp=900)]},
        ),
        num_events=1,
    )
    event = events[0]
    assert event["type"] == "drafts" and event["op"] == "add"
    assert [(d["to"], d["timestamp"]) for d in event["drafts"]] == [([othello.id], 100), ([], 900)]
    draft_id = event["drafts"][0]["id"]

    events = await verify_action(
        env,
        hamlet,
        call_api(
            env,
            "hamlet",
            "patch",
            f"/drafts/{draft_id}",
            {"draft": _draft(content="Bye", timestamp=950)},
        ),
        num_events=1,
    )
    assert without_id(events[0]) == {
        "type": "drafts",
        "op": "update",
        "draft": {
            "id": draft_id,
            "type": "",
            "to": [],
            "topic": "",
            "content": "Bye",
            "timestamp": 950,
        },
    }

    events = await verify_action(
        env, hamlet, call_api(env, "hamlet", "delete", f"/drafts/{draft_id}"), num_events=1
    )
    assert without_id(events[0]) == {
        "type": "drafts",
        "op": "remove",
        "draft_id": draft_id,
    }


async def test_equal_timestamps_keep_one_order(env: TestEnv) -> None:
    await _create(env, _draft(timestamp=100), _draft(timestamp=100))
    await verify_action(
        env,
        env.users["hamlet"],
        call_api(
            env,
            "hamlet",
            "post",
            "/drafts",
            {"drafts": [_draft(timestamp=100.5), _draft(timestamp=100)]},
        ),
        num_events=1,
    )


async def test_others_hear_nothing(env: TestEnv) -> None:
    await verify_action(
        env,
        env.users["othello"],
        call_api(env, "hamlet", "post", "/drafts", {"drafts": [_draft()]}),
        num_events=0,
    )


async def test_disabling_sync_drops_drafts_without_drafts_events(env: TestEnv) -> None:
    await _create(env, _draft(), _draft(content="two"))
    action = call_api(env, "hamlet", "patch", "/settings", {"enable_drafts_synchronization": False})
    events = await verify_action(env, env.users["hamlet"], action, num_events=2)
    assert [e["type"] for e in events] == ["user_settings", "update_display_settings"]
    # A modern client gets only the user_settings event, and also forgets its drafts.
    assert_success(
        await env.client("hamlet").patch("/settings", {"enable_drafts_synchronization": True})
    )
    await _create(env, _draft())
    await verify_action(
        env,
        env.users["hamlet"],
        action,
        num_events=1,
        client_capabilities={"user_settings_object": True},
    )
