"""``realm_bots`` and the ``realm_bot`` events: the bots a user administers (every bot for
an administrator, their own for anyone else), kept current by the events of every action
that changes a bot, for administrators, owners and other users alike."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from hubbub.actions.users import do_regenerate_api_key, do_revoke_api_keys
from hubbub.bootstrap import create_user_in_realm
from hubbub.cli import command_services
from hubbub.models import Role, User
from hubbub.workers.event_outbox import relay_event_outbox
from tests.events.verify import register, verify_action
from tests.helpers import TestEnv, assert_error, assert_success, published_notices, without_id

# Who watches each change: an administrator, the owner of the bots made below, another
# member who owns one of their own, and a guest who owns none.
WATCHERS = ("iago", "hamlet", "othello", "polonius")


def _bot_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [without_id(e) for e in events if e["type"] == "realm_bot"]


async def _make_bots(env: TestEnv) -> tuple[User, User]:
    """A bot of hamlet's and one of othello's."""
    mine = await env.create_user(
        "helper-bot@example.com", "Helper Bot", bot_owner=env.users["hamlet"]
    )
    theirs = await env.create_user(
        "other-bot@example.com", "Other Bot", bot_owner=env.users["othello"]
    )
    return mine, theirs


async def _watch(
    env: TestEnv, action: Callable[[], Awaitable[object]], *watchers: str
) -> dict[str, list[dict[str, Any]]]:
    """Run ``action`` once while every watcher's queue is open; check each watcher's
    events turn their old state into a fresh one, and return each one's bot events."""
    names = watchers or WATCHERS

    # Each watcher registers before the next one's verify_action runs, and the innermost
    # runs the action: every queue is open when it happens, and it happens once.
    async def nested(index: int) -> dict[str, list[dict[str, Any]]]:
        if index == len(names):
            await action()
            return {}
        seen: dict[str, list[dict[str, Any]]] = {}

        async def inner() -> None:
            seen.update(await nested(index + 1))

        events = await verify_action(env, env.users[names[index]], inner)
        seen[names[index]] = _bot_events(events)
        return seen

    return await nested(0)


async def test_state_by_viewer(env: TestEnv) -> None:
    mine, theirs = await _make_bots(env)
    states = {name: (await register(env, env.users[name]))["realm_bots"] for name in WATCHERS}
    assert [b["user_id"] for b in states["iago"]] == [mine.id, theirs.id]
    assert [b["user_id"] for b in states["hamlet"]] == [mine.id]
    assert [b["user_id"] for b in states["othello"]] == [theirs.id]
    assert states["polonius"] == []
    assert states["hamlet"][0] == {
        "email": "helper-bot@example.com",
        "user_id": mine.id,
        "full_name": "Helper Bot",
        "bot_type": 1,
        "is_active": True,
        "api_key": mine.api_key,
        "default_sending_stream": None,
        "default_events_register_stream": None,
        "default_all_public_streams": False,
        # Always a URL, whatever client_gravatar says.
        "avatar_url": states["iago"][0]["avatar_url"],
        "services": [],
        "owner_id": env.users["hamlet"].id,
    }
    assert states["hamlet"][0]["avatar_url"].startswith("https://secure.gravatar.com/avatar/")
    # Only a client that asks for realm_bot gets the key.
    assert "realm_bots" not in await register(env, env.users["iago"], fetch_event_types=["realm"])
    # A deactivated bot stays in its administrators' lists.
    assert_success(await env.client("iago").delete(f"/users/{env.users['othello'].id}"))
    [other] = [
        b
        for b in (await register(env, env.users["iago"]))["realm_bots"]
        if b["user_id"] == theirs.id
    ]
    assert other["is_active"] is False


async def test_created(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    created: list[User] = []

    async def action() -> None:
        created.append(await env.create_user("new-bot@example.com", "New Bot", bot_owner=hamlet))

    seen = await _watch(env, action)
    [bot] = created
    expected = {
        "type": "realm_bot",
        "op": "add",
        "bot": {
            "email": "new-bot@example.com",
            "user_id": bot.id,
            "full_name": "New Bot",
            "bot_type": 1,
            "is_active": True,
            "api_key": bot.api_key,
            "default_sending_stream": None,
            "default_events_register_stream": None,
            "default_all_public_streams": False,
            "avatar_url": seen["iago"][0]["bot"]["avatar_url"],
            "services": [],
            "owner_id": hamlet.id,
        },
    }
    assert seen == {"iago": [expected], "hamlet": [expected], "othello": [], "polonius": []}


async def test_created_by_the_command_line(env: TestEnv) -> None:
    """``hubbub create-user --bot``: the organization's first owner owns the bot, and a
    running server publishes the events the command left in the outbox."""
    command = command_services(env.services.settings)
    try:

        async def action() -> None:
            await create_user_in_realm(
                command,
                subdomain="",
                email="robot-bot@example.com",
                full_name="Robot",
                role=Role.MEMBER,
                password=None,
                bot=True,
            )
            assert await relay_event_outbox(env.services) > 0

        seen = await _watch(env, action, "desdemona", "iago", "hamlet")
    finally:
        await command.close()
    assert [e["op"] for e in seen["desdemona"]] == ["add"]
    assert seen["desdemona"][0]["bot"]["owner_id"] == env.users["desdemona"].id
    assert seen["iago"] == seen["desdemona"] and seen["hamlet"] == []


async def test_renamed(env: TestEnv) -> None:
    mine, _ = await _make_bots(env)
    for actor, name in (("hamlet", "Renamed By Owner"), ("iago", "Renamed By Admin")):

        async def action(actor: str = actor, name: str = name) -> None:
            assert_success(await env.client(actor).patch(f"/users/{mine.id}", {"full_name": name}))

        seen = await _watch(env, action)
        update = {
            "type": "realm_bot",
            "op": "update",
            "bot": {"user_id": mine.id, "full_name": name},
        }
        assert seen == {"iago": [update], "hamlet": [update], "othello": [], "polonius": []}


async def test_a_refused_change_sends_nothing(env: TestEnv) -> None:
    mine, theirs = await _make_bots(env)

    async def action() -> None:
        # Not hamlet's bot; then a name Zulip refuses.
        response = await env.client("hamlet").patch(f"/users/{theirs.id}", {"full_name": "Mine"})
        assert_error(response, "Insufficient permission")
        response = await env.client("hamlet").patch(f"/users/{mine.id}", {"full_name": "a*b"})
        assert_error(response, "Invalid characters in name!")

    assert await _watch(env, action) == {name: [] for name in WATCHERS}


async def test_deactivated_with_its_owner_and_reactivated(env: TestEnv) -> None:
    mine, _ = await _make_bots(env)
    hamlet = env.users["hamlet"]

    async def deactivate() -> None:
        assert_success(await env.client("iago").delete(f"/users/{hamlet.id}"))

    # Since feature level 222 an update with is_active, not a remove.
    seen = await _watch(env, deactivate, "iago", "othello", "polonius")
    off = {"type": "realm_bot", "op": "update", "bot": {"user_id": mine.id, "is_active": False}}
    assert seen == {"iago": [off], "othello": [], "polonius": []}

    async def reactivate_owner() -> None:
        assert_success(await env.client("iago").post(f"/users/{hamlet.id}/reactivate"))

    # A reactivated owner's bots stay deactivated, as in Zulip.
    seen = await _watch(env, reactivate_owner, "iago", "othello")
    assert seen == {"iago": [], "othello": []}

    async def reactivate_bot() -> None:
        assert_success(await env.client("iago").post(f"/users/{mine.id}/reactivate"))

    seen = await _watch(env, reactivate_bot)
    on = {"type": "realm_bot", "op": "update", "bot": {"user_id": mine.id, "is_active": True}}
    assert seen == {"iago": [on], "hamlet": [on], "othello": [], "polonius": []}


async def test_api_key_regenerated(env: TestEnv) -> None:
    mine, theirs = await _make_bots(env)
    keys: list[str] = []

    async def by_the_bot() -> None:
        # ``POST /users/me/api_key/regenerate`` with the bot's own credentials.
        keys.append(
            assert_success(await env.client(mine).post("/users/me/api_key/regenerate"))["api_key"]
        )

    seen = await _watch(env, by_the_bot)
    update = {"type": "realm_bot", "op": "update", "bot": {"user_id": mine.id, "api_key": keys[0]}}
    assert seen == {"iago": [update], "hamlet": [update], "othello": [], "polonius": []}

    async def by_command() -> None:
        # ``hubbub rotate-api-key``.
        async with env.services.write() as tx:
            keys.append(await do_regenerate_api_key(tx, theirs))

    seen = await _watch(env, by_command)
    update = {
        "type": "realm_bot",
        "op": "update",
        "bot": {"user_id": theirs.id, "api_key": keys[1]},
    }
    assert seen == {"iago": [update], "hamlet": [], "othello": [update], "polonius": []}

    async def human() -> None:
        # A human's new key is nobody's bot data.
        async with env.services.write() as tx:
            await do_regenerate_api_key(tx, env.users["polonius"])

    assert await _watch(env, human, "iago", "hamlet") == {"iago": [], "hamlet": []}


async def test_api_keys_revoked(env: TestEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """``hubbub revoke-api-keys --all-users``: each bot's new key reaches its
    administrators (the humans' queues stop trusting them, so only iago watches: the
    revocation is checked on the bus)."""
    mine, theirs = await _make_bots(env)
    published = published_notices(env, monkeypatch)
    async with env.services.write() as tx:
        assert await do_revoke_api_keys(tx, env.realm.id, None) == len(env.users) + 2
    sent = [
        {"event": n.event, "to": sorted(n.user_ids)}
        for n in published
        if n.event["type"] == "realm_bot"
    ]
    fresh = {bot.id: (await env.reload(bot)).api_key for bot in (mine, theirs)}
    admins = sorted([env.users["desdemona"].id, env.users["iago"].id])
    assert sent == [
        {
            "event": {
                "type": "realm_bot",
                "op": "update",
                "bot": {"user_id": mine.id, "api_key": fresh[mine.id]},
            },
            "to": sorted([*admins, env.users["hamlet"].id]),
        },
        {
            "event": {
                "type": "realm_bot",
                "op": "update",
                "bot": {"user_id": theirs.id, "api_key": fresh[theirs.id]},
            },
            "to": sorted([*admins, env.users["othello"].id]),
        },
    ]


async def test_role_change_of_a_viewer(env: TestEnv) -> None:
    """A user who becomes an administrator gains everyone's bots, and loses them again
    (keeping their own) when the role goes."""
    mine, theirs = await _make_bots(env)
    hamlet = env.users["hamlet"]

    def change(role: Role) -> Callable[[], Awaitable[None]]:
        async def action() -> None:
            assert_success(
                await env.client("desdemona").patch(f"/users/{hamlet.id}", {"role": role})
            )

        return action

    seen = await _watch(env, change(Role.ADMINISTRATOR), "hamlet", "iago", "othello")
    assert [(e["op"], e["bot"]["user_id"]) for e in seen["hamlet"]] == [("add", theirs.id)]
    assert seen["iago"] == seen["othello"] == []
    # Administrator to owner: still every bot, nothing to send.
    seen = await _watch(env, change(Role.OWNER), "hamlet")
    assert seen == {"hamlet": []}
    seen = await _watch(env, change(Role.MEMBER), "hamlet")
    assert seen == {
        "hamlet": [{"type": "realm_bot", "op": "delete", "bot": {"user_id": theirs.id}}]
    }
    assert [b["user_id"] for b in (await register(env, hamlet))["realm_bots"]] == [mine.id]


async def test_role_change_of_a_bot(env: TestEnv) -> None:
    """A bot's role is in its ``realm_user`` data only; as an administrator it
    administers every bot, itself included."""
    mine, theirs = await _make_bots(env)

    async def promote() -> None:
        assert_success(
            await env.client("iago").patch(f"/users/{mine.id}", {"role": Role.ADMINISTRATOR})
        )

    seen = await _watch(env, promote)
    assert seen == {name: [] for name in WATCHERS}
    state = await register(env, mine)
    assert [b["user_id"] for b in state["realm_bots"]] == [mine.id, theirs.id]

    # As an administrator the bot hears of the other bots' changes too.
    async def rename_by_owner() -> None:
        assert_success(
            await env.client("othello").patch(f"/users/{theirs.id}", {"full_name": "Y Bot"})
        )

    events = await verify_action(env, mine, rename_by_owner)
    assert _bot_events(events) == [
        {"type": "realm_bot", "op": "update", "bot": {"user_id": theirs.id, "full_name": "Y Bot"}}
    ]


async def test_queues_that_do_not_ask_get_nothing(env: TestEnv) -> None:
    async def action() -> None:
        await env.create_user("quiet-bot@example.com", "Quiet Bot", bot_owner=env.users["iago"])

    events = await verify_action(
        env, env.users["iago"], action, event_types=["realm_user"], fetch_event_types=["realm_user"]
    )
    assert _bot_events(events) == []
