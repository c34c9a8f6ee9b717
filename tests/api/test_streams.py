"""``GET /streams`` (every filter), ``GET /streams/{id}``, ``GET /get_stream_id``,
``GET /streams/{id}/members``, ``GET /users/me/{id}/topics``, ``DELETE /streams/{id}`` and
``POST``/``DELETE /default_streams``: results, visibility by role, and errors that change
nothing."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from hubbub.db.tables import stream, subscription
from hubbub.models import Stream
from hubbub.queries.streams import get_default_stream_ids
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import send_stream_message

MISSING_STREAM_ID = 9999


def _names(body: dict[str, Any]) -> list[str]:
    return [s["name"] for s in body["streams"]]


async def _setup_streams(env: TestEnv) -> dict[str, Stream]:
    """Public "Verona" (hamlet), private "Secret" (hamlet), private "Hidden" (othello),
    web-public "Web" (othello), public "Lobby" (polonius, the guest)."""
    return {
        "Verona": await env.subscribe("hamlet", "Verona"),
        "Secret": await env.subscribe("hamlet", "Secret", invite_only=True),
        "Hidden": await env.subscribe("othello", "Hidden", invite_only=True),
        "Web": await env.subscribe("othello", "Web", is_web_public=True),
        "Lobby": await env.subscribe("polonius", "Lobby"),
    }


async def _default_ids(env: TestEnv) -> list[int]:
    async with env.services.db.read() as conn:
        return await get_default_stream_ids(conn, env.realm.id)


async def _stream_row(env: TestEnv, stream_id: int) -> Any:
    async with env.services.db.read() as conn:
        return (await conn.execute(sa.select(stream).where(stream.c.id == stream_id))).one()


async def _active_subscriber_rows(env: TestEnv, stream_id: int) -> int:
    async with env.services.db.read() as conn:
        count = await conn.scalar(
            sa.select(sa.func.count())
            .select_from(subscription)
            .where(subscription.c.stream_id == stream_id, subscription.c.active)
        )
    return int(count or 0)


# --- GET /streams ---------------------------------------------------------------------------


async def test_get_streams_member_defaults(env: TestEnv) -> None:
    streams = await _setup_streams(env)
    body = assert_success(await env.client("hamlet").get("/streams"))
    # Public streams and the private ones hamlet is subscribed to, sorted by name.
    assert _names(body) == ["Lobby", "Secret", "Verona", "Web"]
    verona = next(s for s in body["streams"] if s["name"] == "Verona")
    assert verona["stream_id"] == streams["Verona"].id
    assert verona["invite_only"] is False and verona["stream_weekly_traffic"] is None
    assert "is_default" not in verona


async def test_get_streams_each_filter(env: TestEnv) -> None:
    await _setup_streams(env)
    hamlet = env.client("hamlet")

    async def names(**params: Any) -> list[str]:
        return _names(assert_success(await hamlet.get("/streams", params)))

    assert await names(include_public=False) == ["Secret", "Verona"]
    assert await names(include_subscribed=False) == ["Lobby", "Verona", "Web"]
    assert await names(include_public=False, include_subscribed=False) == []
    assert await names(include_public=False, include_subscribed=False, include_web_public=True) == [
        "Web"
    ]
    # Only bots have owners: for anyone else the option adds nothing.
    assert await names(include_public=False, include_owner_subscribed=True) == ["Secret", "Verona"]


async def test_get_streams_include_default_marks_without_adding(env: TestEnv) -> None:
    streams = await _setup_streams(env)
    assert_success(
        await env.client("iago").post("/default_streams", {"stream_id": streams["Lobby"].id})
    )
    body = assert_success(
        await env.client("hamlet").get(
            "/streams", {"include_public": False, "include_default": True}
        )
    )
    # Lobby is a default stream, but include_default does not list it by itself.
    assert {s["name"]: s["is_default"] for s in body["streams"]} == {
        "Secret": False,
        "Verona": False,
    }
    body = assert_success(await env.client("hamlet").get("/streams", {"include_default": True}))
    assert {s["name"]: s["is_default"] for s in body["streams"]}["Lobby"] is True


async def test_get_streams_include_all_active(env: TestEnv) -> None:
    await _setup_streams(env)
    for admin in ("iago", "desdemona"):
        body = assert_success(await env.client(admin).get("/streams", {"include_all_active": True}))
        assert _names(body) == ["Hidden", "Lobby", "Secret", "Verona", "Web"]
    # Without the option an administrator lists what a member would (plus own subscriptions).
    assert _names(assert_success(await env.client("iago").get("/streams"))) == [
        "Lobby",
        "Verona",
        "Web",
    ]
    for name in ("shiva", "hamlet", "polonius"):
        assert_error(
            await env.client(name).get("/streams", {"include_all_active": True}),
            "User not authorized for this query",
        )


async def test_get_streams_guest(env: TestEnv) -> None:
    await _setup_streams(env)
    polonius = env.client("polonius")
    # include_public gives a guest nothing: only subscribed (and, if asked, web-public).
    assert _names(assert_success(await polonius.get("/streams"))) == ["Lobby"]
    assert _names(assert_success(await polonius.get("/streams", {"include_web_public": True}))) == [
        "Lobby",
        "Web",
    ]
    assert (
        _names(assert_success(await polonius.get("/streams", {"include_subscribed": False}))) == []
    )


async def test_get_streams_bot_owner_subscribed(env: TestEnv) -> None:
    streams = await _setup_streams(env)
    bot = await env.create_user("helper-bot@example.com", "Helper", bot_owner=env.users["hamlet"])
    client = env.client(bot)
    assert _names(assert_success(await client.get("/streams", {"include_public": False}))) == []
    body = assert_success(
        await client.get("/streams", {"include_public": False, "include_owner_subscribed": True})
    )
    # The owner's private stream too, as Zulip lets a bot list it.
    assert _names(body) == ["Secret", "Verona"]
    assert body["streams"][0]["stream_id"] == streams["Secret"].id


async def test_get_streams_bad_parameter(env: TestEnv) -> None:
    assert_error(
        await env.client("hamlet").get("/streams", {"include_public": "yes"}),
        "include_public is not valid JSON",
    )


# --- GET /streams/{stream_id} ---------------------------------------------------------------


async def test_get_stream_by_id_visibility(env: TestEnv) -> None:
    streams = await _setup_streams(env)
    body = assert_success(await env.client("hamlet").get(f"/streams/{streams['Verona'].id}"))
    assert (
        body["stream"]["name"] == "Verona" and body["stream"]["stream_id"] == streams["Verona"].id
    )
    assert body["stream"]["stream_weekly_traffic"] is None
    # Administrators see private streams they are not subscribed to; members do not.
    hidden = f"/streams/{streams['Hidden'].id}"
    assert assert_success(await env.client("iago").get(hidden))["stream"]["invite_only"] is True
    cases = [
        ("hamlet", hidden),
        ("shiva", hidden),
        ("polonius", f"/streams/{streams['Verona'].id}"),
        ("hamlet", f"/streams/{MISSING_STREAM_ID}"),
    ]
    for name, path in cases:
        assert_error(await env.client(name).get(path), "Invalid stream ID")
    # A guest sees web-public streams and those they are subscribed to.
    for target in ("Web", "Lobby"):
        assert_success(await env.client("polonius").get(f"/streams/{streams[target].id}"))


# --- GET /get_stream_id ---------------------------------------------------------------------


async def test_get_stream_id(env: TestEnv) -> None:
    streams = await _setup_streams(env)
    body = assert_success(await env.client("hamlet").get("/get_stream_id", {"stream": "verona"}))
    assert body["stream_id"] == streams["Verona"].id
    assert (
        assert_success(await env.client("hamlet").get("/get_stream_id", {"stream": "Secret"}))[
            "stream_id"
        ]
        == streams["Secret"].id
    )
    assert (
        assert_success(await env.client("polonius").get("/get_stream_id", {"stream": "Web"}))[
            "stream_id"
        ]
        == streams["Web"].id
    )
    cases = [
        ("hamlet", "nonexistent"),
        ("hamlet", "Hidden"),
        # As Zulip: looking up a name does not give administrators unsubscribed private streams.
        ("iago", "Hidden"),
        ("polonius", "Verona"),
    ]
    for name, stream_name in cases:
        assert_error(
            await env.client(name).get("/get_stream_id", {"stream": stream_name}),
            f"Invalid stream name '{stream_name}'",
        )
    assert_error(
        await env.client("hamlet").get("/get_stream_id"),
        "Missing 'stream' argument",
        code="REQUEST_VARIABLE_MISSING",
    )


# --- GET /streams/{stream_id}/members -------------------------------------------------------


async def test_get_subscribers(env: TestEnv) -> None:
    streams = await _setup_streams(env)
    hamlet, othello = env.users["hamlet"], env.users["othello"]
    await env.subscribe("othello", "Verona")
    path = f"/streams/{streams['Verona'].id}/members"
    body = assert_success(await env.client("shiva").get(path))
    assert body["subscribers"] == sorted([hamlet.id, othello.id])
    secret = f"/streams/{streams['Secret'].id}/members"
    assert assert_success(await env.client("hamlet").get(secret))["subscribers"] == [hamlet.id]
    # Administrators see the subscribers of private streams they are not in.
    assert assert_success(await env.client("iago").get(secret))["subscribers"] == [hamlet.id]
    lobby = f"/streams/{streams['Lobby'].id}/members"
    assert assert_success(await env.client("polonius").get(lobby))["subscribers"] == [
        env.users["polonius"].id
    ]
    cases = [
        ("othello", secret),
        ("polonius", path),
        # hubbub's rule (queries/streams.py, can_access_subscribers): a guest sees the
        # subscribers only of streams they are subscribed to, web-public ones included.
        ("polonius", f"/streams/{streams['Web'].id}/members"),
        ("hamlet", f"/streams/{MISSING_STREAM_ID}/members"),
    ]
    for name, target_path in cases:
        assert_error(await env.client(name).get(target_path), "Invalid stream ID")


async def test_subscribers_exclude_deactivated_users(env: TestEnv) -> None:
    verona = await env.subscribe("hamlet", "Verona")
    await env.subscribe("othello", "Verona")
    othello = env.users["othello"]
    assert_success(await env.client("iago").delete(f"/users/{othello.id}"))
    body = assert_success(await env.client("hamlet").get(f"/streams/{verona.id}/members"))
    assert body["subscribers"] == [env.users["hamlet"].id]


# --- GET /users/me/{stream_id}/topics -------------------------------------------------------


async def test_get_stream_topics(env: TestEnv) -> None:
    streams = await _setup_streams(env)
    # No messages exist yet, so no stream has topics.
    for name, target in [
        ("hamlet", "Verona"),
        ("othello", "Verona"),
        ("hamlet", "Secret"),
        ("polonius", "Web"),
        ("polonius", "Lobby"),
    ]:
        body = assert_success(await env.client(name).get(f"/users/me/{streams[target].id}/topics"))
        assert body["topics"] == []
    cases = [
        ("othello", "Secret"),
        # An administrator needs a subscription to read a private stream's topics.
        ("iago", "Secret"),
        ("polonius", "Verona"),
    ]
    for name, target in cases:
        assert_error(
            await env.client(name).get(f"/users/me/{streams[target].id}/topics"),
            "Invalid stream ID",
        )
    assert_error(
        await env.client("hamlet").get(f"/users/me/{MISSING_STREAM_ID}/topics"),
        "Invalid stream ID",
    )


async def test_stream_topics_from_messages(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    first = await send_stream_message(env, "hamlet", "Denmark", topic="Lunch")
    await send_stream_message(env, "hamlet", "Denmark", topic="dinner")
    newest_lunch = await send_stream_message(env, "hamlet", "Denmark", topic="LUNCH")
    denmark = (await env.subscribe("hamlet", "Denmark")).id
    # Newest topic first; case variants are one topic, named as its newest message.
    expected = [{"name": "LUNCH", "max_id": newest_lunch}, {"name": "dinner", "max_id": first + 1}]
    for name in ("hamlet", "othello"):  # othello, unsubscribed, reads public history
        body = assert_success(await env.client(name).get(f"/users/me/{denmark}/topics"))
        assert body["topics"] == expected

    # Protected history: only the topics of messages one received.
    secret = (await env.subscribe("hamlet", "Secret", invite_only=True)).id
    await send_stream_message(env, "hamlet", "Secret", topic="before")
    await env.subscribe("othello", "Secret")
    after = await send_stream_message(env, "hamlet", "Secret", topic="after")
    body = assert_success(await env.client("othello").get(f"/users/me/{secret}/topics"))
    assert body["topics"] == [{"name": "after", "max_id": after}]
    body = assert_success(await env.client("hamlet").get(f"/users/me/{secret}/topics"))
    assert [t["name"] for t in body["topics"]] == ["after", "before"]


# --- DELETE /streams/{stream_id} ------------------------------------------------------------


async def test_archive_stream(env: TestEnv) -> None:
    streams = await _setup_streams(env)
    verona = streams["Verona"]
    await env.subscribe("othello", "Verona")
    assert_success(await env.client("iago").post("/default_streams", {"stream_id": verona.id}))
    assert_success(await env.client("iago").delete(f"/streams/{verona.id}"))
    row = await _stream_row(env, verona.id)
    assert row.deactivated is True and row.name == "Verona"
    # Zulip 10.2 keeps the subscriptions of an archived stream.
    assert await _active_subscriber_rows(env, verona.id) == 2
    assert await _default_ids(env) == []
    # Gone from every read.
    assert "Verona" not in _names(
        assert_success(await env.client("iago").get("/streams", {"include_all_active": True}))
    )
    assert "Verona" not in _names(assert_success(await env.client("hamlet").get("/streams")))
    subs = assert_success(await env.client("hamlet").get("/users/me/subscriptions"))
    assert [s["name"] for s in subs["subscriptions"]] == ["Secret"]
    for path in (f"/streams/{verona.id}", f"/streams/{verona.id}/members"):
        assert_error(await env.client("iago").get(path), "Invalid stream ID")
    assert_error(
        await env.client("hamlet").get("/get_stream_id", {"stream": "Verona"}),
        "Invalid stream name 'Verona'",
    )
    # Archiving again.
    assert_error(
        await env.client("iago").delete(f"/streams/{verona.id}"), "Channel is already deactivated"
    )
    # The name is free again.
    fresh = await env.subscribe("hamlet", "Verona")
    assert fresh.id != verona.id
    body = assert_success(await env.client("hamlet").get("/get_stream_id", {"stream": "Verona"}))
    assert body["stream_id"] == fresh.id


async def test_archive_private_stream_without_subscription(env: TestEnv) -> None:
    streams = await _setup_streams(env)
    hidden = streams["Hidden"]
    assert_success(await env.client("desdemona").delete(f"/streams/{hidden.id}"))
    assert (await _stream_row(env, hidden.id)).deactivated is True
    subs = assert_success(await env.client("othello").get("/users/me/subscriptions"))
    assert [s["name"] for s in subs["subscriptions"]] == ["Web"]


async def test_archive_stream_errors_change_nothing(env: TestEnv) -> None:
    streams = await _setup_streams(env)
    verona = streams["Verona"]
    # Only administrators and the stream's own administrators (none here) may archive it.
    for name in ("shiva", "hamlet"):
        assert_error(
            await env.client(name).delete(f"/streams/{verona.id}"),
            "You do not have permission to administer this channel.",
        )
    # A guest who cannot see the stream is not told it exists.
    assert_error(await env.client("polonius").delete(f"/streams/{verona.id}"), "Invalid stream ID")
    assert_error(
        await env.client("iago").delete(f"/streams/{MISSING_STREAM_ID}"), "Invalid stream ID"
    )
    assert (await _stream_row(env, verona.id)).deactivated is False
    assert await _active_subscriber_rows(env, verona.id) == 1
    assert "Verona" in _names(assert_success(await env.client("othello").get("/streams")))


# --- /default_streams -----------------------------------------------------------------------


async def test_add_and_remove_default_stream(env: TestEnv) -> None:
    streams = await _setup_streams(env)
    iago = env.client("iago")
    verona, web = streams["Verona"], streams["Web"]
    assert_success(await iago.post("/default_streams", {"stream_id": verona.id}))
    assert_success(await env.client("desdemona").post("/default_streams", {"stream_id": web.id}))
    assert await _default_ids(env) == sorted([verona.id, web.id])
    # Already a default stream: nothing to do, and no error (as Zulip).
    assert_success(await iago.post("/default_streams", {"stream_id": verona.id}))
    assert await _default_ids(env) == sorted([verona.id, web.id])
    state = assert_success(
        await env.client("hamlet").post("/register", {"fetch_event_types": ["default_streams"]})
    )
    # Stream ids, in id order, since feature level 330.
    assert state["realm_default_streams"] == sorted([verona.id, web.id])
    # New users join the default streams.
    newcomer = await env.create_user("new@example.com", "Newcomer")
    subs = assert_success(await env.client(newcomer).get("/users/me/subscriptions"))
    assert sorted(s["name"] for s in subs["subscriptions"]) == ["Verona", "Web"]

    assert_success(await iago.delete("/default_streams", {"stream_id": verona.id}))
    assert await _default_ids(env) == [web.id]
    # Removing a stream that is not a default stream succeeds too (as Zulip 8.0).
    assert_success(await iago.delete("/default_streams", {"stream_id": verona.id}))
    assert await _default_ids(env) == [web.id]
    # An administrator may remove any stream they can administer, private ones included.
    assert_success(await iago.delete("/default_streams", {"stream_id": streams["Hidden"].id}))


async def test_default_stream_errors_change_nothing(env: TestEnv) -> None:
    streams = await _setup_streams(env)
    verona, secret, hidden = streams["Verona"], streams["Secret"], streams["Hidden"]
    assert_success(await env.client("iago").post("/default_streams", {"stream_id": verona.id}))
    for name in ("shiva", "hamlet", "polonius"):
        for method in ("post", "delete"):
            assert_error(
                await getattr(env.client(name), method)(
                    "/default_streams", {"stream_id": verona.id}
                ),
                "Must be an organization administrator",
                code="UNAUTHORIZED_PRINCIPAL",
            )
    # A private stream cannot be a default stream; one the administrator is not subscribed to
    # is not even found.
    await env.subscribe("iago", "Secret")
    assert_error(
        await env.client("iago").post("/default_streams", {"stream_id": secret.id}),
        "Private streams cannot be made default.",
    )
    assert_error(
        await env.client("iago").post("/default_streams", {"stream_id": hidden.id}),
        "Invalid stream ID",
    )
    for method in ("post", "delete"):
        client = env.client("iago")
        assert_error(
            await getattr(client, method)("/default_streams", {"stream_id": MISSING_STREAM_ID}),
            "Invalid stream ID",
        )
        assert_error(
            await getattr(client, method)("/default_streams", {}),
            "Missing 'stream_id' argument",
            code="REQUEST_VARIABLE_MISSING",
        )
        assert_error(
            await getattr(client, method)("/default_streams", {"stream_id": "seven"}),
            "stream_id is not valid JSON",
        )
    assert await _default_ids(env) == [verona.id]
