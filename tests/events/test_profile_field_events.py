"""``custom_profile_fields`` and the ``realm_user`` updates of profile values: applying them
to old state gives the new state, and they reach the right users."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tests.events.verify import call_api, register, verify_action
from tests.helpers import TestEnv, assert_success

FIELDS = "/realm/profile_fields"
PROFILE_DATA = "/users/me/profile_data"
CHOICES = {"vim": {"text": "Vim", "order": "1"}, "emacs": {"text": "Emacs", "order": "2"}}
TYPES = {
    "SHORT_TEXT": {"id": 1, "name": "Short text"},
    "LONG_TEXT": {"id": 2, "name": "Long text"},
    "DATE": {"id": 4, "name": "Date picker"},
    "URL": {"id": 5, "name": "Link"},
    "EXTERNAL_ACCOUNT": {"id": 7, "name": "External account"},
    "PRONOUNS": {"id": 8, "name": "Pronouns"},
    "SELECT": {"id": 3, "name": "List of options"},
    "USER": {"id": 6, "name": "Person picker"},
}

Action = Callable[[], Awaitable[Any]]


async def _create(env: TestEnv, **params: Any) -> int:
    return int(assert_success(await env.client("iago").post(FIELDS, params))["id"])


async def test_register_state(env: TestEnv) -> None:
    phone = await _create(env, name="Phone", field_type=1, display_in_profile_summary=True)
    state = await register(env, env.users["polonius"], fetch_event_types=["custom_profile_fields"])
    assert state["custom_profile_fields"] == [
        {
            "id": phone,
            "name": "Phone",
            "type": 1,
            "hint": "",
            "field_data": "",
            "order": phone,
            "required": False,
            "editable_by_user": True,
            "display_in_profile_summary": True,
        }
    ]
    assert state["custom_profile_field_types"] == TYPES
    state = await register(env, env.users["hamlet"], fetch_event_types=["realm_user"])
    assert "custom_profile_fields" not in state and "custom_profile_field_types" not in state


async def test_create_sends_the_whole_list_to_everyone(env: TestEnv) -> None:
    phone = await _create(env, name="Phone", field_type=1)
    for user in ("hamlet", "polonius", "iago"):
        params = {"name": f"Editor {user}", "field_type": 3, "field_data": CHOICES}
        create = call_api(env, "iago", "post", FIELDS, params)
        events = await verify_action(env, env.users[user], create, num_events=1)
        assert events[0]["type"] == "custom_profile_fields"
        names = [f["name"] for f in events[0]["fields"]]
        assert names[0] == "Phone" and names[-1] == f"Editor {user}"
        assert events[0]["fields"][0]["id"] == phone


async def test_edit_reorder_and_delete(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    phone = await _create(env, name="Phone", field_type=1)
    editor = await _create(env, name="Editor", field_type=3, field_data=CHOICES)
    events = await verify_action(
        env,
        hamlet,
        call_api(env, "iago", "patch", f"{FIELDS}/{phone}", {"hint": "Work", "name": "Mobile"}),
        num_events=1,
    )
    assert events[0]["fields"][0] | {"hint": "Work", "name": "Mobile"} == events[0]["fields"][0]
    events = await verify_action(
        env,
        hamlet,
        call_api(env, "iago", "patch", FIELDS, {"order": [editor, phone]}),
        num_events=1,
    )
    assert [(f["id"], f["order"]) for f in events[0]["fields"]] == [(editor, 0), (phone, 1)]
    events = await verify_action(
        env, hamlet, call_api(env, "iago", "delete", f"{FIELDS}/{phone}", {}), num_events=1
    )
    assert [f["id"] for f in events[0]["fields"]] == [editor]
    # Only the field list, when that is all a client asked for.
    await verify_action(
        env,
        hamlet,
        call_api(env, "iago", "patch", f"{FIELDS}/{editor}", {"display_in_profile_summary": True}),
        num_events=1,
        event_types=["custom_profile_fields"],
    )


async def test_delete_drops_values_from_realm_users(env: TestEnv) -> None:
    phone = await _create(env, name="Phone", field_type=1)
    bio = await _create(env, name="Bio", field_type=2)
    for user in ("hamlet", "othello"):
        data = [{"id": phone, "value": user}, {"id": bio, "value": "Hi"}]
        assert_success(await env.client(user).patch(PROFILE_DATA, {"data": data}))
    # A deactivated user's values go too.
    assert_success(await env.client("iago").delete(f"/users/{env.users['othello'].id}"))
    events = await verify_action(
        env,
        env.users["hamlet"],
        call_api(env, "iago", "delete", f"{FIELDS}/{phone}", {}),
        num_events=1,
        event_types=["custom_profile_fields", "realm_user"],
    )
    assert events[0]["type"] == "custom_profile_fields"


async def test_value_changes_send_realm_user_updates(env: TestEnv) -> None:
    phone = await _create(env, name="Phone", field_type=1)
    mentor = await _create(env, name="Mentor", field_type=6)
    hamlet = env.users["hamlet"]
    iago = env.users["iago"].id
    set_values = call_api(
        env,
        "hamlet",
        "patch",
        PROFILE_DATA,
        {"data": [{"id": phone, "value": "+1 <5>"}, {"id": mentor, "value": [iago]}]},
    )
    events = await verify_action(env, env.users["polonius"], set_values, num_events=2)
    assert [e["person"] for e in events] == [
        {
            "user_id": hamlet.id,
            "custom_profile_field": {
                "id": phone,
                "value": "+1 <5>",
                "rendered_value": "<p>+1 &lt;5&gt;</p>",
            },
        },
        {"user_id": hamlet.id, "custom_profile_field": {"id": mentor, "value": f"[{iago}]"}},
    ]
    assert all(e["type"] == "realm_user" and e["op"] == "update" for e in events)
    # The same values again change nothing and send nothing.
    await verify_action(env, hamlet, set_values, num_events=0)
    remove = call_api(env, "hamlet", "delete", PROFILE_DATA, {"data": [phone, mentor]})
    events = await verify_action(env, hamlet, remove, num_events=2)
    assert events[0]["person"] == {
        "user_id": hamlet.id,
        "custom_profile_field": {"id": phone, "value": None},
    }
    await verify_action(env, hamlet, remove, num_events=0)


async def test_removed_choice_clears_values_with_events(env: TestEnv) -> None:
    editor = await _create(env, name="Editor", field_type=3, field_data=CHOICES)
    for user, choice in (("hamlet", "vim"), ("othello", "emacs")):
        assert_success(
            await env.client(user).patch(PROFILE_DATA, {"data": [{"id": editor, "value": choice}]})
        )
    events = await verify_action(
        env,
        env.users["shiva"],
        call_api(
            env, "iago", "patch", f"{FIELDS}/{editor}", {"field_data": {"vim": CHOICES["vim"]}}
        ),
        num_events=2,
    )
    assert events[0]["person"] == {
        "user_id": env.users["othello"].id,
        "custom_profile_field": {"id": editor, "value": None},
    }
    assert events[1]["type"] == "custom_profile_fields"


async def test_failed_requests_send_nothing(env: TestEnv) -> None:
    phone = await _create(env, name="Phone", field_type=1)

    async def failures() -> None:
        client = env.client("iago")
        assert (await client.post(FIELDS, {"name": "Phone", "field_type": 1})).status_code == 400
        assert (await client.patch(FIELDS, {"order": []})).status_code == 400
        assert (await client.delete(f"{FIELDS}/9999")).status_code == 400
        data = {"data": [{"id": phone, "value": "ok"}, {"id": phone, "value": "x" * 51}]}
        assert (await client.patch(PROFILE_DATA, data)).status_code == 400

    await verify_action(env, env.users["hamlet"], failures, num_events=0)


async def test_required_and_editable_by_user_changes(env: TestEnv) -> None:
    """Feature levels 244 and 296: the flags travel in the whole list, to everyone."""
    phone = await _create(env, name="Phone", field_type=1, required=True)
    for user, params in (
        ("hamlet", {"editable_by_user": False}),
        ("polonius", {"required": False}),
        ("iago", {"required": True, "editable_by_user": True}),
    ):
        events = await verify_action(
            env,
            env.users[user],
            call_api(env, "iago", "patch", f"{FIELDS}/{phone}", params),
            num_events=1,
        )
        [field] = events[0]["fields"]
        assert params.items() <= field.items()
    state = await register(env, env.users["hamlet"], fetch_event_types=["custom_profile_fields"])
    [field] = state["custom_profile_fields"]
    assert (field["required"], field["editable_by_user"]) == (True, True)
