"""``muted_users`` and ``alert_words`` events: each carries the user's whole list, goes to
that user only, and turns the old /register state into the new one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tests.events.verify import call_api, verify_action
from tests.helpers import TestEnv, assert_success, without_id
from tests.messages_helpers import send_direct_message, send_stream_message

MUTED = "/users/me/muted_users"
WORDS = "/users/me/alert_words"


def _fails(
    env: TestEnv, method: str, path: str, params: dict[str, Any] | None = None
) -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        response = await env.client("hamlet").request(method, path, params)
        assert response.status_code == 400

    return action


async def test_mute_and_unmute(env: TestEnv) -> None:
    hamlet, othello, iago = (env.users[n] for n in ("hamlet", "othello", "iago"))
    events = await verify_action(
        env, hamlet, call_api(env, "hamlet", "POST", f"{MUTED}/{othello.id}"), num_events=1
    )
    assert without_id(events[0]) == {
        "type": "muted_users",
        "muted_users": [{"id": othello.id, "timestamp": events[0]["muted_users"][0]["timestamp"]}],
    }
    assert abs(events[0]["muted_users"][0]["timestamp"] - env.services.clock.now()) <= 2
    events = await verify_action(
        env, hamlet, call_api(env, "hamlet", "POST", f"{MUTED}/{iago.id}"), num_events=1
    )
    assert [m["id"] for m in events[0]["muted_users"]] == [othello.id, iago.id]
    events = await verify_action(
        env, hamlet, call_api(env, "hamlet", "DELETE", f"{MUTED}/{othello.id}"), num_events=1
    )
    assert [m["id"] for m in events[0]["muted_users"]] == [iago.id]
    # Failures send nothing.
    for action in (
        _fails(env, "POST", f"{MUTED}/{hamlet.id}"),
        _fails(env, "POST", f"{MUTED}/{iago.id}"),
        _fails(env, "DELETE", f"{MUTED}/{othello.id}"),
        _fails(env, "POST", f"{MUTED}/999999"),
    ):
        await verify_action(env, hamlet, action, num_events=0)


async def test_mute_marks_messages_read(env: TestEnv) -> None:
    """Muting sends ``update_message_flags`` for the muted user's unread messages (all of
    them, streams and direct messages, ascending) before ``muted_users``, and applying both
    to a client's unread state gives the fresh state; unmuting changes no flags."""
    hamlet, othello = env.users["hamlet"], env.users["othello"]
    for user in ("hamlet", "othello"):
        await env.subscribe(user, "Denmark")
    read_already = await send_stream_message(env, "othello", "Denmark", topic="old")
    assert_success(
        await env.client("hamlet").post(
            "/messages/flags", {"messages": [read_already], "op": "add", "flag": "read"}
        )
    )
    theirs = [
        await send_stream_message(env, "othello", "Denmark"),
        await send_direct_message(env, "othello", ["hamlet"]),
        await send_direct_message(env, "othello", ["hamlet", "iago"]),
    ]
    await send_direct_message(env, "iago", ["hamlet"])
    event_types = ["message", "update_message_flags", "muted_users", "realm_user"]
    flags, muted = await verify_action(
        env,
        hamlet,
        call_api(env, "hamlet", "POST", f"{MUTED}/{othello.id}"),
        num_events=2,
        event_types=event_types,
    )
    assert without_id(flags) == {
        "type": "update_message_flags",
        "op": "add",
        "operation": "add",
        "flag": "read",
        "messages": theirs,
        "all": False,
    }
    assert muted["type"] == "muted_users"
    [unmuted] = await verify_action(
        env,
        hamlet,
        call_api(env, "hamlet", "DELETE", f"{MUTED}/{othello.id}"),
        num_events=1,
        event_types=event_types,
    )
    assert unmuted["type"] == "muted_users"
    # Nothing left unread from them: the mute sends its list alone.
    [muted] = await verify_action(
        env,
        hamlet,
        call_api(env, "hamlet", "POST", f"{MUTED}/{othello.id}"),
        num_events=1,
        event_types=event_types,
    )
    assert muted["type"] == "muted_users"


async def test_muted_users_event_goes_to_the_muter_only(env: TestEnv) -> None:
    othello, iago = env.users["othello"], env.users["iago"]
    # Neither the muted user nor a bystander hears of it.
    await verify_action(
        env, othello, call_api(env, "hamlet", "POST", f"{MUTED}/{othello.id}"), num_events=0
    )
    await verify_action(
        env, iago, call_api(env, "hamlet", "DELETE", f"{MUTED}/{othello.id}"), num_events=0
    )


async def test_alert_words(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    events = await verify_action(
        env,
        hamlet,
        call_api(env, "hamlet", "POST", WORDS, {"alert_words": ["lunch", " Tea "]}),
        num_events=1,
    )
    assert without_id(events[0]) == {"type": "alert_words", "alert_words": ["lunch", "Tea"]}
    events = await verify_action(
        env,
        hamlet,
        call_api(env, "hamlet", "DELETE", WORDS, {"alert_words": ["TEA"]}),
        num_events=1,
    )
    assert events[0]["alert_words"] == ["lunch"]
    # As in Zulip, a request that changes nothing still sends the list.
    events = await verify_action(
        env,
        hamlet,
        call_api(env, "hamlet", "POST", WORDS, {"alert_words": ["LUNCH"]}),
        num_events=1,
    )
    assert events[0]["alert_words"] == ["lunch"]
    await verify_action(
        env, hamlet, _fails(env, "POST", WORDS, {"alert_words": ["x" * 101]}), num_events=0
    )
    # Nobody else hears of it.
    await verify_action(
        env,
        env.users["othello"],
        call_api(env, "hamlet", "POST", WORDS, {"alert_words": ["dinner"]}),
        num_events=0,
    )


async def test_event_types_filter(env: TestEnv) -> None:
    hamlet, othello = env.users["hamlet"], env.users["othello"]
    await verify_action(
        env,
        hamlet,
        call_api(env, "hamlet", "POST", f"{MUTED}/{othello.id}"),
        num_events=0,
        event_types=["alert_words"],
    )
    events = await verify_action(
        env,
        hamlet,
        call_api(env, "hamlet", "POST", WORDS, {"alert_words": ["lunch"]}),
        num_events=1,
        event_types=["alert_words"],
    )
    assert events[0]["type"] == "alert_words"
