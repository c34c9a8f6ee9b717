"""``realm_emoji`` events: every upload and deactivation sends the realm's whole custom
emoji dict (deactivated emoji too) to every active user of the realm."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from tests.emoji_helpers import gif_bytes, post_emoji
from tests.events.verify import register, verify_action
from tests.helpers import TestEnv, assert_success


def _upload(env: TestEnv, user: str, name: str, **kwargs: object) -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        assert_success(await post_emoji(env, user, name, **kwargs))  # type: ignore[arg-type]

    return action


def _deactivate(env: TestEnv, user: str, name: str) -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        assert_success(await env.client(user).delete(f"/realm/emoji/{name}"))

    return action


async def test_upload_and_deactivate(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    events = await verify_action(env, hamlet, _upload(env, "othello", "green_tick"), num_events=1)
    assert events[0]["type"] == "realm_emoji" and events[0]["op"] == "update"
    [(key, emoji)] = events[0]["realm_emoji"].items()
    assert emoji["id"] == key and emoji["name"] == "green_tick"
    assert emoji["author_id"] == env.users["othello"].id and not emoji["deactivated"]

    events = await verify_action(
        env,
        hamlet,
        _upload(
            env, "iago", "party", content=gif_bytes(), file_name="p.gif", content_type="image/gif"
        ),
        num_events=1,
    )
    party = next(e for e in events[0]["realm_emoji"].values() if e["name"] == "party")
    assert party["still_url"] is not None

    events = await verify_action(
        env, hamlet, _deactivate(env, "othello", "green_tick"), num_events=1
    )
    assert events[0]["realm_emoji"][key] == {**emoji, "deactivated": True}
    assert len(events[0]["realm_emoji"]) == 2


async def test_the_whole_realm_hears_and_only_of_its_own(env: TestEnv) -> None:
    # A guest, who may not add emoji, still learns of them.
    await verify_action(
        env, env.users["polonius"], _upload(env, "hamlet", "kitty_pic"), num_events=1
    )
    other = await env.create_realm("other", "Other")
    stranger = await env.create_user("stranger@other.example.com", "Stranger", realm=other)
    # A stranger's queue (another realm) hears nothing of this realm's emoji.
    state = assert_success(
        await env.client(stranger, host="other.localhost").post(
            "/register", {"fetch_event_types": '["realm_emoji"]'}
        )
    )
    assert state["realm_emoji"] == {}
    assert_success(await post_emoji(env, "hamlet", "doggo_pic"))
    body = assert_success(
        await env.client(stranger, host="other.localhost").get(
            "/events",
            {
                "queue_id": state["queue_id"],
                "last_event_id": state["last_event_id"],
                "dont_block": True,
            },
        )
    )
    assert body["events"] == []


async def test_failed_changes_send_nothing(env: TestEnv) -> None:
    await verify_action(
        env,
        env.users["hamlet"],
        _failing(env),
        num_events=0,
    )


def _failing(env: TestEnv) -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        await post_emoji(env, "polonius", "ghost")
        await post_emoji(env, "hamlet", "broken", b"not an image")
        await env.client("hamlet").delete("/realm/emoji/missing")

    return action


async def test_state_only_for_its_event_type(env: TestEnv) -> None:
    assert_success(await post_emoji(env, "hamlet", "kitty_pic"))
    state = await register(env, env.users["hamlet"], fetch_event_types='["realm_emoji"]')
    assert [e["name"] for e in state["realm_emoji"].values()] == ["kitty_pic"]
    state = await register(env, env.users["hamlet"], fetch_event_types='["realm_linkifiers"]')
    assert "realm_emoji" not in state
