"""``stream`` create, ``subscription`` add/remove/peer_add/peer_remove: for every kind of
observer, old state + events == fresh state, with and without subscriber lists."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from tests.events.verify import verify_action
from tests.helpers import TestEnv, assert_success

OBSERVERS = ("hamlet", "othello", "iago", "polonius", "desdemona")


async def _verify_for_all(
    env: TestEnv,
    make_action: Callable[[], Callable[[], Awaitable[object]]],
    setup_again: Callable[[], Awaitable[object]] | None = None,
) -> dict[str, list[list[str]]]:
    """Run a fresh copy of the action for each observer and subscriber-list mode; return
    each observer's event kinds (for the include_subscribers=True run)."""
    kinds: dict[str, list[list[str]]] = {}
    for name in OBSERVERS:
        for include in (False, True):
            events = await verify_action(
                env, env.users[name], make_action(), include_subscribers=include
            )
            if include:
                kinds[name] = [[e["type"], e.get("op", "")] for e in events]
            if setup_again is not None:
                await setup_again()
    return kinds


async def test_create_public_stream(env: TestEnv) -> None:
    counter = iter(range(100))

    def make_action() -> Callable[[], Awaitable[object]]:
        async def action() -> None:
            assert_success(
                await env.client("hamlet").post(
                    "/users/me/subscriptions",
                    {"subscriptions": [{"name": f"Stream {next(counter)}"}]},
                )
            )

        return action

    kinds = await _verify_for_all(env, make_action)
    assert kinds["hamlet"] == [["stream", "create"], ["subscription", "add"]]
    assert kinds["othello"] == [["stream", "create"], ["subscription", "peer_add"]]
    # Guests do not see public streams they are not subscribed to.
    assert kinds["polonius"] == []


async def test_create_private_stream_with_principals(env: TestEnv) -> None:
    counter = iter(range(100))
    othello = env.users["othello"]

    def make_action() -> Callable[[], Awaitable[object]]:
        async def action() -> None:
            assert_success(
                await env.client("hamlet").post(
                    "/users/me/subscriptions",
                    {
                        "subscriptions": [{"name": f"Secret {next(counter)}"}],
                        "invite_only": True,
                        "principals": [env.users["hamlet"].id, othello.id],
                    },
                )
            )

        return action

    kinds = await _verify_for_all(env, make_action)
    assert kinds["othello"] == [["stream", "create"], ["subscription", "add"]]
    assert kinds["iago"] == [["stream", "create"], ["subscription", "peer_add"]]
    assert kinds["polonius"] == []


async def test_subscribe_to_existing_and_web_public(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Open")
    await env.subscribe("hamlet", "Web", is_web_public=True)

    async def resubscribe() -> None:
        for user in ("othello", "polonius"):
            await env.client(user).delete("/users/me/subscriptions", {"subscriptions": ["Open"]})
            await env.client(user).delete("/users/me/subscriptions", {"subscriptions": ["Web"]})

    def make_action() -> Callable[[], Awaitable[object]]:
        async def action() -> None:
            assert_success(
                await env.client("othello").post(
                    "/users/me/subscriptions", {"subscriptions": [{"name": "Open"}]}
                )
            )
            assert_success(
                await env.client("polonius").post(
                    "/users/me/subscriptions", {"subscriptions": [{"name": "Web"}]}
                )
            )

        return action

    kinds = await _verify_for_all(env, make_action, resubscribe)
    assert kinds["hamlet"] == [["subscription", "peer_add"], ["subscription", "peer_add"]]
    assert kinds["polonius"] == [["subscription", "add"]]


async def test_unsubscribe_public_and_private(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Open")

    async def resubscribe() -> None:
        await env.subscribe("hamlet", "Open")
        await env.subscribe("hamlet", "Secret", invite_only=True)
        await env.subscribe("othello", "Secret", invite_only=True)

    await resubscribe()

    def make_action() -> Callable[[], Awaitable[object]]:
        async def action() -> None:
            assert_success(
                await env.client("hamlet").delete(
                    "/users/me/subscriptions", {"subscriptions": ["Open", "Secret"]}
                )
            )

        return action

    kinds = await _verify_for_all(env, make_action, resubscribe)
    # The private stream leaves the unsubscribed user's stream list.
    assert kinds["hamlet"] == [["subscription", "remove"], ["stream", "delete"]]
    assert kinds["othello"] == [["subscription", "peer_remove"], ["subscription", "peer_remove"]]
    assert kinds["iago"] == [["subscription", "peer_remove"], ["subscription", "peer_remove"]]


async def test_admin_unsubscribing_keeps_private_stream(env: TestEnv) -> None:
    await env.subscribe("iago", "Secret", invite_only=True)

    async def action() -> None:
        await env.client("iago").delete("/users/me/subscriptions", {"subscriptions": ["Secret"]})

    events = await verify_action(env, env.users["iago"], action, include_subscribers=True)
    assert [e["op"] for e in events] == ["remove"]


@pytest.mark.parametrize("observer", ["hamlet", "iago", "polonius"])
async def test_deactivation_leaves_subscriber_lists(env: TestEnv, observer: str) -> None:
    await env.subscribe("hamlet", "Open")
    await env.subscribe("othello", "Open")
    await env.subscribe("polonius", "Open")
    othello = env.users["othello"]

    async def deactivate() -> None:
        assert_success(await env.client("iago").delete(f"/users/{othello.id}"))

    async def reactivate() -> None:
        assert_success(await env.client("iago").post(f"/users/{othello.id}/reactivate"))

    events = await verify_action(env, env.users[observer], deactivate, include_subscribers=True)
    assert ["subscription", "peer_remove"] in [[e["type"], e.get("op")] for e in events]
    events = await verify_action(env, env.users[observer], reactivate, include_subscribers=True)
    assert ["subscription", "peer_add"] in [[e["type"], e.get("op")] for e in events]
