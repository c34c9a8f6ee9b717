"""``subscription``/``update``, ``stream``/``update`` (and the ``create``/``delete``/``peer_add``
a privacy change brings) and ``default_streams``: for every kind of observer, old state +
events == fresh state, with and without subscriber lists."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

from hubbub.models import Stream
from hubbub.queries.streams import get_stream_by_name
from hubbub.queries.user_groups import get_group_id_by_name
from hubbub.register.state import apply_event
from tests.events.verify import normalized, register, verify_action
from tests.helpers import TestEnv, assert_success

PROPERTIES = "/users/me/subscriptions/properties"
# An owner, an administrator, a moderator, two members and a guest.
OBSERVERS = ("desdemona", "iago", "shiva", "hamlet", "othello", "polonius")

Action = Callable[[], Awaitable[object]]


async def _verify_for_all(
    env: TestEnv,
    make_action: Callable[[], Action],
    undo: Action | None = None,
    observers: tuple[str, ...] = OBSERVERS,
) -> dict[str, list[tuple[str, str, str]]]:
    """Verify a fresh copy of the action for each observer, with and without subscriber
    lists (``undo`` restores the starting point after each); return each observer's
    (type, op, property) list from the include_subscribers=True run."""
    kinds: dict[str, list[tuple[str, str, str]]] = {}
    for name in observers:
        for include in (False, True):
            events = await verify_action(
                env, env.users[name], make_action(), include_subscribers=include
            )
            if include:
                kinds[name] = [(e["type"], e.get("op", ""), e.get("property", "")) for e in events]
            if undo is not None:
                await undo()
    return kinds


def _patcher(env: TestEnv, user: str, stream_id: int, params: dict[str, Any]) -> Action:
    async def action() -> None:
        assert_success(await env.client(user).patch(f"/streams/{stream_id}", params))

    return action


async def _streams(env: TestEnv) -> tuple[Stream, Stream]:
    """A public stream (hamlet, iago subscribed) and a private one (othello, desdemona)."""
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("iago", "Denmark")
    secret = await env.subscribe("othello", "Secret", invite_only=True)
    await env.subscribe("desdemona", "Secret")
    return denmark, secret


UPDATE = ("stream", "update")


def _updates(*properties: str) -> list[tuple[str, str, str]]:
    return [(*UPDATE, p) for p in properties]


# --- subscription properties --------------------------------------------------------------


async def test_subscription_property_updates(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    hamlet = env.users["hamlet"]
    changes: list[tuple[str, Any, list[str]]] = [
        ("color", "#123abc", ["color"]),
        ("is_muted", True, ["in_home_view", "is_muted"]),
        ("in_home_view", True, ["in_home_view", "is_muted"]),
        ("pin_to_top", True, ["pin_to_top"]),
        ("desktop_notifications", False, ["desktop_notifications"]),
        ("audible_notifications", True, ["audible_notifications"]),
        ("push_notifications", False, ["push_notifications"]),
        ("email_notifications", True, ["email_notifications"]),
        ("wildcard_mentions_notify", False, ["wildcard_mentions_notify"]),
    ]
    for prop, value, sent in changes:
        data = [{"stream_id": denmark.id, "property": prop, "value": value}]

        async def action(data: list[dict[str, Any]] = data) -> None:
            assert_success(await env.client("hamlet").post(PROPERTIES, {"subscription_data": data}))

        for include in (False, True):
            events = await verify_action(env, hamlet, action, include_subscribers=include)
            assert [e["property"] for e in events] == sent
            assert all(e["type"] == "subscription" and e["op"] == "update" for e in events)
    # The two muting events agree.
    data = [{"stream_id": denmark.id, "property": "in_home_view", "value": False}]

    async def mute() -> None:
        assert_success(await env.client("hamlet").post(PROPERTIES, {"subscription_data": data}))

    events = await verify_action(env, hamlet, mute)
    assert [(e["property"], e["value"]) for e in events] == [
        ("in_home_view", False),
        ("is_muted", True),
    ]


async def test_subscription_properties_are_private(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    data = [
        {"stream_id": denmark.id, "property": "pin_to_top", "value": True},
        {"stream_id": denmark.id, "property": "color", "value": "#fff"},
    ]

    async def action() -> None:
        assert_success(await env.client("hamlet").post(PROPERTIES, {"subscription_data": data}))

    events = await verify_action(env, env.users["othello"], action, num_events=0)
    assert events == []
    events = await verify_action(env, env.users["hamlet"], action, num_events=2)


# --- simple stream properties ---------------------------------------------------------------


async def test_description_changes(env: TestEnv) -> None:
    denmark, secret = await _streams(env)
    counter = itertools.count()
    for target in (denmark, secret):

        def make_action(target: Stream = target) -> Action:
            return _patcher(
                env, "iago", target.id, {"description": f"Take **{next(counter)}**\nsteps"}
            )

        kinds = await _verify_for_all(env, make_action)
        expected = _updates("description")
        if target is denmark:
            assert kinds["othello"] == expected and kinds["polonius"] == []
        else:
            assert kinds["othello"] == expected and kinds["desdemona"] == expected
            assert kinds["hamlet"] == [] and kinds["shiva"] == [] and kinds["polonius"] == []
        assert kinds["iago"] == expected
    # The same description again changes nothing and tells nobody.
    same = _patcher(env, "iago", denmark.id, {"description": "Same\nagain"})
    await same()
    events = await verify_action(env, env.users["hamlet"], same)
    assert events == []


async def test_description_event_has_rendered_description(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    events = await verify_action(
        env, env.users["hamlet"], _patcher(env, "iago", denmark.id, {"description": "a < b"})
    )
    assert events[0]["rendered_description"] == "<p>a &lt; b</p>"
    assert events[0]["name"] == "Denmark" and events[0]["value"] == "a < b"


async def test_renames(env: TestEnv) -> None:
    denmark, secret = await _streams(env)
    await env.subscribe("hamlet", "Zeta")
    names = iter(f"Name {i}" for i in range(100))
    for target in (denmark, secret):

        def make_action(target: Stream = target) -> Action:
            return _patcher(env, "iago", target.id, {"new_name": next(names)})

        kinds = await _verify_for_all(env, make_action)
        assert kinds["iago"] == _updates("name")
        assert kinds["polonius"] == []
    # A change of case only; the event carries the old name.
    events = await verify_action(
        env, env.users["hamlet"], _patcher(env, "iago", denmark.id, {"new_name": "NAME X"})
    )
    events = await verify_action(
        env, env.users["hamlet"], _patcher(env, "iago", denmark.id, {"new_name": "name x"})
    )
    assert (events[0]["name"], events[0]["value"]) == ("NAME X", "name x")


async def test_post_policy_changes(env: TestEnv) -> None:
    denmark, secret = await _streams(env)
    for target in (denmark, secret):
        policies = itertools.cycle([2, 3, 4, 1])

        def make_action(target: Stream = target, policies: Any = policies) -> Action:
            return _patcher(env, "iago", target.id, {"stream_post_policy": next(policies)})

        kinds = await _verify_for_all(env, make_action)
        # The legacy parameter sets can_send_message_group (feature level 333); the
        # deprecated properties follow.
        assert kinds["iago"] == _updates(
            "can_send_message_group", "stream_post_policy", "is_announcement_only"
        )
    # The legacy parameter too.
    events = await verify_action(
        env,
        env.users["hamlet"],
        _patcher(env, "iago", denmark.id, {"is_announcement_only": True}),
    )
    async with env.services.db.read() as conn:
        admins = await get_group_id_by_name(conn, env.realm.id, "role:administrators")
    assert [(e["property"], e["value"]) for e in events] == [
        ("can_send_message_group", admins),
        ("stream_post_policy", 2),
        ("is_announcement_only", True),
    ]


async def test_retention_changes(env: TestEnv) -> None:
    denmark, secret = await _streams(env)
    for target in (denmark, secret):
        values = itertools.cycle([10, "unlimited", 3])

        def make_action(target: Stream = target, values: Any = values) -> Action:
            days = next(values)
            return _patcher(env, "desdemona", target.id, {"message_retention_days": days})

        kinds = await _verify_for_all(env, make_action)
        assert kinds["iago"] == _updates("message_retention_days")


async def test_retention_back_to_realm_default(env: TestEnv) -> None:
    """``value`` is null here, which Zulip's document does not allow for this event (Zulip
    sends it all the same), so the events are read without checking them against it."""
    denmark = await env.subscribe("hamlet", "Denmark")
    assert_success(
        await env.client("desdemona").patch(
            f"/streams/{denmark.id}", {"message_retention_days": 30}
        )
    )
    for name in ("hamlet", "iago", "polonius"):
        for include in (False, True):
            user = env.users[name]
            before = await register(env, user, include_subscribers=include)
            assert_success(
                await env.client("desdemona").patch(
                    f"/streams/{denmark.id}", {"message_retention_days": "realm_default"}
                )
            )
            body = assert_success(
                await env.client(user, check_spec=False).get(
                    "/events",
                    {
                        "queue_id": before["queue_id"],
                        "last_event_id": before["last_event_id"],
                        "dont_block": True,
                    },
                )
            )
            state = copy.deepcopy(before)
            for event in body["events"]:
                apply_event(state, event, include_subscribers=include)
            after = await register(env, user, include_subscribers=include)
            assert normalized(state) == normalized(after)
            if name == "polonius":
                assert body["events"] == []
            else:
                [event] = body["events"]
                assert (event["property"], event["value"]) == ("message_retention_days", None)
            assert_success(
                await env.client("desdemona").patch(
                    f"/streams/{denmark.id}", {"message_retention_days": 30}
                )
            )


async def test_can_remove_subscribers_group_changes(env: TestEnv) -> None:
    denmark, secret = await _streams(env)
    async with env.services.db.read() as conn:
        groups = [
            await get_group_id_by_name(conn, env.realm.id, name)
            for name in ("role:members", "role:moderators", "role:everyone")
        ]
    # Desdemona is subscribed to the private stream (unsubscribed admins may not change it).
    for target in (denmark, secret):
        cycle = itertools.cycle(groups)

        def make_action(target: Stream = target, cycle: Any = cycle) -> Action:
            return _patcher(
                env, "desdemona", target.id, {"can_remove_subscribers_group": next(cycle)}
            )

        kinds = await _verify_for_all(env, make_action)
        assert kinds["iago"] == _updates("can_remove_subscribers_group")


async def test_no_change_sends_nothing(env: TestEnv) -> None:
    denmark, secret = await _streams(env)
    for target in (denmark, secret):
        params = {
            "description": "",
            "is_private": target.invite_only,
            "is_web_public": False,
            "history_public_to_subscribers": target.history_public_to_subscribers,
            "is_default_stream": False,
            "stream_post_policy": 1,
            "message_retention_days": "realm_default",
            "can_remove_subscribers_group": target.can_remove_subscribers_group_id,
        }
        for name in OBSERVERS:
            await verify_action(
                env, env.users[name], _patcher(env, "desdemona", target.id, params), num_events=0
            )


async def test_several_changes_in_one_request(env: TestEnv) -> None:
    denmark, _ = await _streams(env)
    counter = itertools.count()

    def make_action() -> Action:
        n = next(counter)
        return _patcher(
            env,
            "desdemona",
            denmark.id,
            {
                "description": f"Round {n}",
                "new_name": f"Denmark {n}",
                "stream_post_policy": 2 if n % 2 else 3,
                "message_retention_days": n + 1,
            },
        )

    kinds = await _verify_for_all(env, make_action)
    assert kinds["hamlet"] == _updates(
        "message_retention_days",
        "description",
        "name",
        "can_send_message_group",
        "stream_post_policy",
        "is_announcement_only",
    )


# --- default streams ------------------------------------------------------------------------


async def test_default_stream_changes(env: TestEnv) -> None:
    await _streams(env)
    await env.subscribe("polonius", "Guests welcome")
    for target_name in ("Denmark", "Guests welcome"):
        async with env.services.db.read() as conn:
            target = await get_stream_by_name(conn, env.realm.id, target_name)
        assert target is not None
        flips = itertools.cycle([True, False])

        def make_action(target: Stream = target, flips: Any = flips) -> Action:
            return _patcher(env, "iago", target.id, {"is_default_stream": next(flips)})

        kinds = await _verify_for_all(env, make_action)
        for name in OBSERVERS:
            # Guests are not told the default streams (Zulip 8.0).
            expected = [] if name == "polonius" else [("default_streams", "", "")]
            assert kinds[name] == expected


async def test_guests_are_not_told_default_streams(env: TestEnv) -> None:
    denmark, _ = await _streams(env)
    guests = await env.subscribe("polonius", "Guests welcome")
    assert_success(
        await env.client("iago").patch(f"/streams/{guests.id}", {"is_default_stream": True})
    )
    state = await register(env, env.users["polonius"])
    assert state["realm_default_streams"] == []
    await verify_action(
        env,
        env.users["polonius"],
        _patcher(env, "iago", denmark.id, {"is_default_stream": True}),
        num_events=0,
    )
    events = await verify_action(
        env,
        env.users["hamlet"],
        _patcher(env, "iago", denmark.id, {"is_default_stream": False}),
    )
    assert [e["default_streams"] for e in events] == [[guests.id]]


# --- privacy ------------------------------------------------------------------------------


async def test_public_to_private_and_back(env: TestEnv) -> None:
    denmark, _ = await _streams(env)
    to_private = {"is_private": True}
    to_public = {"is_private": False}

    async def undo_private() -> None:
        await _patcher(env, "iago", denmark.id, to_public)()

    kinds = await _verify_for_all(
        env, lambda: _patcher(env, "iago", denmark.id, to_private), undo_private
    )
    assert kinds["hamlet"] == _updates("invite_only")  # a subscriber
    assert kinds["iago"] == _updates("invite_only")  # a subscribed admin
    assert kinds["desdemona"] == _updates("invite_only")  # an unsubscribed admin
    assert kinds["othello"] == [("stream", "delete", "")]
    assert kinds["shiva"] == [("stream", "delete", "")]
    assert kinds["polonius"] == []

    await undo_private()
    await _patcher(env, "iago", denmark.id, to_private)()

    async def undo_public() -> None:
        await _patcher(env, "iago", denmark.id, to_private)()

    kinds = await _verify_for_all(
        env, lambda: _patcher(env, "iago", denmark.id, to_public), undo_public
    )
    assert kinds["hamlet"] == _updates("invite_only")
    assert kinds["desdemona"] == _updates("invite_only")
    assert kinds["othello"] == [("stream", "create", ""), ("subscription", "peer_add", "")]
    assert kinds["shiva"] == [("stream", "create", ""), ("subscription", "peer_add", "")]
    assert kinds["polonius"] == []


async def test_private_stream_history(env: TestEnv) -> None:
    _, secret = await _streams(env)
    flips = itertools.cycle([True, False])

    def make_action() -> Action:
        return _patcher(env, "desdemona", secret.id, {"history_public_to_subscribers": next(flips)})

    kinds = await _verify_for_all(env, make_action)
    assert kinds["othello"] == _updates("invite_only")
    assert kinds["iago"] == _updates("invite_only")
    assert kinds["hamlet"] == [] and kinds["polonius"] == []


async def test_web_public_changes(env: TestEnv) -> None:
    denmark, _ = await _streams(env)
    await env.subscribe("polonius", "Guests welcome")
    await env.set_realm_property("enable_spectator_access", True)
    to_web = {"is_web_public": True}
    from_web = {"is_web_public": False}

    async def undo_web() -> None:
        await _patcher(env, "desdemona", denmark.id, from_web)()

    kinds = await _verify_for_all(
        env, lambda: _patcher(env, "desdemona", denmark.id, to_web), undo_web
    )
    # A guest newly sees the stream (but not its subscribers).
    assert kinds["polonius"] == [("stream", "create", "")]
    assert kinds["othello"] == _updates("invite_only")

    await _patcher(env, "desdemona", denmark.id, to_web)()

    async def redo_web() -> None:
        await _patcher(env, "desdemona", denmark.id, to_web)()

    kinds = await _verify_for_all(
        env, lambda: _patcher(env, "desdemona", denmark.id, from_web), redo_web
    )
    assert kinds["polonius"] == [("stream", "delete", "")]
    assert kinds["othello"] == _updates("invite_only")

    # Web-public straight to private (changing privacy needs a subscription).
    await env.subscribe("desdemona", "Denmark")
    to_private = {"is_web_public": False, "is_private": True}

    async def back_to_web() -> None:
        params = {"is_web_public": True, "is_private": False}
        await _patcher(env, "desdemona", denmark.id, params)()

    kinds = await _verify_for_all(
        env, lambda: _patcher(env, "desdemona", denmark.id, to_private), back_to_web
    )
    assert kinds["polonius"] == [("stream", "delete", "")]
    assert kinds["othello"] == [("stream", "delete", "")]
    assert kinds["hamlet"] == _updates("invite_only")


async def test_web_public_stream_with_a_subscribed_guest(env: TestEnv) -> None:
    denmark, _ = await _streams(env)
    await env.subscribe("polonius", "Denmark")
    await env.set_realm_property("enable_spectator_access", True)
    flips = itertools.cycle([True, False])

    def make_action() -> Action:
        return _patcher(env, "desdemona", denmark.id, {"is_web_public": next(flips)})

    kinds = await _verify_for_all(env, make_action)
    assert kinds["polonius"] == _updates("invite_only")


async def test_privacy_change_of_a_default_streams_neighbour(env: TestEnv) -> None:
    """A default stream that turns web-public and back: guests see it come and go in
    realm_default_streams too."""
    denmark, _ = await _streams(env)
    await env.set_realm_property("enable_spectator_access", True)
    assert_success(
        await env.client("iago").patch(f"/streams/{denmark.id}", {"is_default_stream": True})
    )
    flips = itertools.cycle([True, False])

    def make_action() -> Action:
        return _patcher(env, "desdemona", denmark.id, {"is_web_public": next(flips)})

    kinds = await _verify_for_all(env, make_action, observers=("polonius", "hamlet"))
    assert kinds["hamlet"] == _updates("invite_only")


async def test_former_subscriber_loses_a_stream_made_private(env: TestEnv) -> None:
    denmark, _ = await _streams(env)
    await env.subscribe("othello", "Denmark")
    assert_success(
        await env.client("othello").delete(
            "/users/me/subscriptions", {"subscriptions": ["Denmark"]}
        )
    )
    for include in (False, True):
        events = await verify_action(
            env,
            env.users["othello"],
            _patcher(env, "iago", denmark.id, {"is_private": True}),
            include_subscribers=include,
        )
        assert [(e["type"], e["op"]) for e in events] == [("stream", "delete")]
        await _patcher(env, "iago", denmark.id, {"is_private": False})()


async def test_former_subscriber_regains_a_stream_made_public(env: TestEnv) -> None:
    _, secret = await _streams(env)
    await env.subscribe("hamlet", "Secret")
    assert_success(
        await env.client("hamlet").delete("/users/me/subscriptions", {"subscriptions": ["Secret"]})
    )
    await verify_action(
        env, env.users["hamlet"], _patcher(env, "desdemona", secret.id, {"is_private": False})
    )
