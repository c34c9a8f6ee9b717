"""``default_streams`` and ``stream``/``delete`` (archiving): for every kind of observer, old
state + events == fresh state, with and without subscriber lists."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from itertools import count

from hubbub.models import Stream
from tests.events.verify import verify_action
from tests.helpers import TestEnv, assert_error, assert_success

OBSERVERS = ("hamlet", "othello", "iago", "polonius", "desdemona")

Action = Callable[[], Awaitable[object]]


async def _verify_for_all(
    env: TestEnv, make_action: Callable[[], Awaitable[Action]]
) -> dict[str, list[list[str]]]:
    """For each observer and subscriber-list mode, prepare and run a fresh action; return
    each observer's event kinds (from the include_subscribers=True run)."""
    kinds: dict[str, list[list[str]]] = {}
    for name in OBSERVERS:
        for include in (False, True):
            action = await make_action()
            events = await verify_action(env, env.users[name], action, include_subscribers=include)
            if include:
                kinds[name] = [[e["type"], e.get("op", "")] for e in events]
    return kinds


def _archive(env: TestEnv, target: Stream) -> Action:
    async def action() -> None:
        assert_success(await env.client("iago").delete(f"/streams/{target.id}"))

    return action


# --- default streams ------------------------------------------------------------------------


async def test_add_default_streams(env: TestEnv) -> None:
    names = count()
    await env.subscribe("polonius", "Guest room")

    async def make_action() -> Action:
        n = next(names)
        public = await env.subscribe("hamlet", f"Public {n}")
        web = await env.subscribe("othello", f"Web {n}", is_web_public=True)

        async def action() -> None:
            for target in (public, web):
                assert_success(
                    await env.client("iago").post("/default_streams", {"stream_id": target.id})
                )

        return action

    kinds = await _verify_for_all(env, make_action)
    for name in OBSERVERS:
        # Guests are not told the default streams (Zulip 8.0).
        assert kinds[name] == ([] if name == "polonius" else [["default_streams", ""]] * 2)


async def test_default_stream_not_sent_to_guest(env: TestEnv) -> None:
    names = count()

    async def make_action() -> Action:
        lobby = await env.subscribe("polonius", f"Lobby {next(names)}")

        async def action() -> None:
            assert_success(
                await env.client("iago").post("/default_streams", {"stream_id": lobby.id})
            )

        return action

    kinds = await _verify_for_all(env, make_action)
    assert kinds["polonius"] == []
    assert kinds["hamlet"] == [["default_streams", ""]]


async def test_default_stream_event_contents(env: TestEnv) -> None:
    verona = await env.subscribe("hamlet", "Verona")
    web = await env.subscribe("hamlet", "Web", is_web_public=True)

    async def add_both() -> None:
        for target in (web, verona):
            assert_success(
                await env.client("iago").post("/default_streams", {"stream_id": target.id})
            )

    events = await verify_action(env, env.users["othello"], add_both, num_events=2)
    # Stream ids, in id order, since feature level 330: each event has the whole list.
    assert [e["default_streams"] for e in events] == [[web.id], sorted([web.id, verona.id])]

    async def remove_verona() -> None:
        assert_success(
            await env.client("iago").delete("/default_streams", {"stream_id": verona.id})
        )

    # Guests hear nothing of default streams.
    await verify_action(env, env.users["polonius"], remove_verona, num_events=0)
    events = await verify_action(env, env.users["hamlet"], remove_verona, num_events=1)
    assert events[0]["default_streams"] == [web.id]


async def test_remove_default_streams(env: TestEnv) -> None:
    names = count()

    async def make_action() -> Action:
        n = next(names)
        public = await env.subscribe("hamlet", f"Public {n}")
        web = await env.subscribe("polonius", f"Web {n}", is_web_public=True)
        for target in (public, web):
            assert_success(
                await env.client("iago").post("/default_streams", {"stream_id": target.id})
            )

        async def action() -> None:
            for target in (web, public):
                assert_success(
                    await env.client("desdemona").delete(
                        "/default_streams", {"stream_id": target.id}
                    )
                )

        return action

    kinds = await _verify_for_all(env, make_action)
    assert kinds["polonius"] == []
    assert kinds["hamlet"] == [["default_streams", ""]] * 2


async def test_default_stream_errors_send_nothing(env: TestEnv) -> None:
    verona = await env.subscribe("hamlet", "Verona")
    secret = await env.subscribe("iago", "Secret", invite_only=True)

    async def action() -> None:
        assert_error(
            await env.client("hamlet").post("/default_streams", {"stream_id": verona.id}),
            "Must be an organization administrator",
            code="UNAUTHORIZED_PRINCIPAL",
        )
        assert_error(
            await env.client("iago").post("/default_streams", {"stream_id": secret.id}),
            "Private streams cannot be made default.",
        )
        assert_error(
            await env.client("iago").delete("/default_streams", {"stream_id": 9999}),
            "Invalid stream ID",
        )

    for name in OBSERVERS:
        await verify_action(env, env.users[name], action, num_events=0)


# --- archiving ------------------------------------------------------------------------------


async def test_archive_public_default_stream(env: TestEnv) -> None:
    names = count()

    async def make_action() -> Action:
        target = await env.subscribe("hamlet", f"Public {next(names)}")
        await env.subscribe("othello", target.name)
        assert_success(await env.client("iago").post("/default_streams", {"stream_id": target.id}))
        return _archive(env, target)

    kinds = await _verify_for_all(env, make_action)
    for name in ("hamlet", "othello", "iago", "desdemona"):
        # No subscription events (as Zulip 8.0): the delete removes it everywhere.
        assert kinds[name] == [["default_streams", ""], ["stream", "delete"]]
    # The guest could not see it and is not told default streams: nothing.
    assert kinds["polonius"] == []


async def test_archive_private_stream(env: TestEnv) -> None:
    names = count()

    async def make_action() -> Action:
        target = await env.subscribe("hamlet", f"Secret {next(names)}", invite_only=True)
        await env.subscribe("polonius", target.name)
        return _archive(env, target)

    kinds = await _verify_for_all(env, make_action)
    # Subscribers and administrators could see it; othello could not.
    for name in ("hamlet", "polonius", "iago", "desdemona"):
        assert kinds[name] == [["stream", "delete"]]
    assert kinds["othello"] == []


async def test_archive_private_stream_former_subscriber(env: TestEnv) -> None:
    names = count()

    async def make_action() -> Action:
        target = await env.subscribe("hamlet", f"Secret {next(names)}", invite_only=True)
        await env.subscribe("othello", target.name)
        assert_success(
            await env.client("othello").delete(
                "/users/me/subscriptions", {"subscriptions": [target.name]}
            )
        )
        return _archive(env, target)

    kinds = await _verify_for_all(env, make_action)
    assert kinds["othello"] == []
    assert kinds["hamlet"] == [["stream", "delete"]]


async def test_archive_web_public_and_guest_streams(env: TestEnv) -> None:
    names = count()

    async def make_action() -> Action:
        n = next(names)
        web = await env.subscribe("hamlet", f"Web {n}", is_web_public=True)
        lobby = await env.subscribe("polonius", f"Lobby {n}")
        # A public stream the guest left: they cannot see it any more.
        left = await env.subscribe("polonius", f"Left {n}")
        assert_success(
            await env.client("polonius").delete(
                "/users/me/subscriptions", {"subscriptions": [left.name]}
            )
        )

        async def action() -> None:
            for target in (web, lobby, left):
                await _archive(env, target)()

        return action

    kinds = await _verify_for_all(env, make_action)
    assert kinds["polonius"] == [["stream", "delete"]] * 2
    assert kinds["othello"] == [["stream", "delete"]] * 3


async def test_archive_errors_send_nothing(env: TestEnv) -> None:
    verona = await env.subscribe("hamlet", "Verona")

    async def action() -> None:
        assert_error(
            await env.client("shiva").delete(f"/streams/{verona.id}"),
            "You do not have permission to administer this channel.",
        )
        assert_error(await env.client("iago").delete("/streams/9999"), "Invalid stream ID")

    for name in OBSERVERS:
        await verify_action(env, env.users[name], action, num_events=0)
