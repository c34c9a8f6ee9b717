"""``realm_linkifiers`` events: every change sends the realm's ordered list to every active
user, but only to queues registered with the ``linkifier_url_template`` capability."""

from __future__ import annotations

from typing import Any

import pytest

from hubbub.actions.users import do_deactivate_user
from tests.events.verify import call_api, register, verify_action
from tests.helpers import TestEnv, assert_success, published_notices, without_id

CAPABLE: dict[str, Any] = {"client_capabilities": {"linkifier_url_template": True}}
ISSUE = {"pattern": "#(?P<id>[0-9]+)", "url_template": "https://github.com/zulip/zulip/issues/{id}"}


async def _add(env: TestEnv, n: int) -> int:
    data = {"pattern": f"{n}#(?P<id>[0-9]+)", "url_template": f"https://e.com/{n}/{{id}}"}
    return int(assert_success(await env.client("iago").post("/realm/filters", data))["id"])


async def test_add_update_remove(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    events = await verify_action(
        env, hamlet, call_api(env, "iago", "POST", "/realm/filters", ISSUE), num_events=1, **CAPABLE
    )
    linkifier_id = events[0]["realm_linkifiers"][0]["id"]
    assert without_id(events[0]) == {
        "type": "realm_linkifiers",
        "realm_linkifiers": [{**ISSUE, "id": linkifier_id}],
    }
    changed = {"pattern": "#(?P<id>[a-f]+)", "url_template": "https://e.com/{id}"}
    events = await verify_action(
        env,
        hamlet,
        call_api(env, "iago", "PATCH", f"/realm/filters/{linkifier_id}", changed),
        num_events=1,
        **CAPABLE,
    )
    assert events[0]["realm_linkifiers"] == [{**changed, "id": linkifier_id}]
    events = await verify_action(
        env,
        env.users["polonius"],
        call_api(env, "iago", "DELETE", f"/realm/filters/{linkifier_id}"),
        num_events=1,
        **CAPABLE,
    )
    assert events[0]["realm_linkifiers"] == []


async def test_reorder(env: TestEnv) -> None:
    ids = [await _add(env, n) for n in range(3)]
    new_order = [ids[1], ids[2], ids[0]]
    events = await verify_action(
        env,
        env.users["othello"],
        call_api(env, "iago", "PATCH", "/realm/linkifiers", {"ordered_linkifier_ids": new_order}),
        num_events=1,
        **CAPABLE,
    )
    assert [item["id"] for item in events[0]["realm_linkifiers"]] == new_order
    # A realm without linkifiers has nothing to reorder, and says nothing.
    for linkifier_id in ids:
        assert_success(await env.client("iago").delete(f"/realm/filters/{linkifier_id}"))
    await verify_action(
        env,
        env.users["othello"],
        call_api(env, "iago", "PATCH", "/realm/linkifiers", {"ordered_linkifier_ids": []}),
        num_events=0,
        **CAPABLE,
    )


async def test_failed_change_sends_nothing(env: TestEnv) -> None:
    async def action() -> None:
        response = await env.client("iago").post("/realm/filters", {**ISSUE, "url_template": "{"})
        assert response.status_code == 400

    await verify_action(env, env.users["hamlet"], action, num_events=0, **CAPABLE)


async def test_queues_without_capability_get_no_event(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    # Old state [] + no events == fresh state [] (feature level 176).
    await verify_action(
        env, hamlet, call_api(env, "iago", "POST", "/realm/filters", ISSUE), num_events=0
    )
    await verify_action(
        env,
        hamlet,
        call_api(env, "iago", "POST", "/realm/filters", {**ISSUE, "pattern": "x(?P<id>y)"}),
        num_events=0,
        fetch_event_types=["realm_linkifiers", "realm_filters"],
        event_types=["realm_linkifiers", "realm_filters"],
    )
    # A capable queue that did not ask for the event type does not get it either.
    await verify_action(
        env,
        hamlet,
        call_api(env, "iago", "POST", "/realm/filters", {**ISSUE, "pattern": "z(?P<id>y)"}),
        num_events=0,
        event_types=["realm_filters"],
        **CAPABLE,
    )


async def test_sent_to_active_users_only(env: TestEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    # A deactivated user cannot poll a queue; check the recipients on the bus instead.
    async with env.services.write() as tx:
        await do_deactivate_user(tx, env.users["othello"])
    sent = published_notices(env, monkeypatch)
    state = await register(env, env.users["hamlet"], **CAPABLE)
    assert state["realm_linkifiers"] == []
    await _add(env, 1)
    active = sorted(u.id for name, u in env.users.items() if name != "othello")
    assert [(n.realm_id, n.user_ids) for n in sent] == [(env.realm.id, tuple(active))]
