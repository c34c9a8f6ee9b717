"""``realm_playgrounds`` events: every change sends the realm's whole list to every active
user; applying them to an old ``/register`` state gives a fresh one."""

from __future__ import annotations

import pytest

from hubbub.actions.users import do_deactivate_user
from tests.events.verify import call_api, register, verify_action
from tests.helpers import TestEnv, published_notices, without_id

PYTHON = {
    "name": "Python playground",
    "pygments_language": "Python",
    "url_template": "https://python.example.com?code={code}",
}


async def test_add_and_remove(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    events = await verify_action(
        env, hamlet, call_api(env, "iago", "POST", "/realm/playgrounds", PYTHON), num_events=1
    )
    first = events[0]["realm_playgrounds"][0]["id"]
    assert without_id(events[0]) == {
        "type": "realm_playgrounds",
        "realm_playgrounds": [{**PYTHON, "id": first}],
    }
    rust = {"name": "Rust", "pygments_language": "Rust", "url_template": "https://r.example/{code}"}
    events = await verify_action(
        env,
        env.users["polonius"],
        call_api(env, "iago", "POST", "/realm/playgrounds", rust),
        num_events=1,
        fetch_event_types=["realm_playgrounds"],
        event_types=["realm_playgrounds"],
    )
    second = events[0]["realm_playgrounds"][1]["id"]
    assert events[0]["realm_playgrounds"] == [{**PYTHON, "id": first}, {**rust, "id": second}]
    events = await verify_action(
        env, hamlet, call_api(env, "iago", "DELETE", f"/realm/playgrounds/{first}"), num_events=1
    )
    assert events[0]["realm_playgrounds"] == [{**rust, "id": second}]


async def test_failed_change_sends_nothing(env: TestEnv) -> None:
    async def action() -> None:
        client = env.client("iago")
        response = await client.post("/realm/playgrounds", {**PYTHON, "url_template": "{"})
        assert response.status_code == 400
        response = await client.delete("/realm/playgrounds/12345")
        assert response.status_code == 400
        response = await env.client("hamlet").post("/realm/playgrounds", PYTHON)
        assert response.status_code == 400

    await verify_action(env, env.users["hamlet"], action, num_events=0)


async def test_queue_without_the_event_type_gets_nothing(env: TestEnv) -> None:
    await verify_action(
        env,
        env.users["othello"],
        call_api(env, "iago", "POST", "/realm/playgrounds", PYTHON),
        num_events=0,
        event_types=["realm_linkifiers"],
    )


async def test_sent_to_active_users_only(env: TestEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    # A deactivated user cannot poll a queue; check the recipients on the bus instead.
    async with env.services.write() as tx:
        await do_deactivate_user(tx, env.users["othello"])
    sent = published_notices(env, monkeypatch)
    state = await register(env, env.users["hamlet"])
    assert state["realm_playgrounds"] == []
    await call_api(env, "iago", "POST", "/realm/playgrounds", PYTHON)()
    active = sorted(u.id for name, u in env.users.items() if name != "othello")
    assert [(n.realm_id, n.user_ids) for n in sent] == [(env.realm.id, tuple(active))]
