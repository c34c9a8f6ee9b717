"""The last Zulip 9.0-10.2 changes: skipped channels when marking unread (feature level
355), detached uploads of an edit (285), the upload's url and filename (272, 286), export
consent events (312), content access through a private stream's groups (354) and the
daily job that marks streams inactive (323). Every success body is validated against
Zulip's schema by the test client."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.clock import FakeClock
from hubbub.db.tables import stream as stream_table
from hubbub.models import Stream
from hubbub.queries.streams import get_stream_by_id, list_streams
from hubbub.settings import Settings
from hubbub.workers import periodic
from tests.events.verify import verify_action
from tests.helpers import TestEnv, assert_error, assert_success, running_env
from tests.messages_helpers import send_stream_message
from tests.uploads_helpers import upload

IGNORED = "ignored_because_not_subscribed_channels"


def _narrow(stream: str) -> list[dict[str, str]]:
    return [{"operator": "channel", "operand": stream}]


async def test_marking_unread_names_the_unsubscribed_channels(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    verona = await env.subscribe("othello", "Verona")
    mine = await send_stream_message(env, "othello", "Denmark")
    other = await send_stream_message(env, "othello", "Verona")
    hamlet = env.client("hamlet")
    # Verona's message gets a row (read) so that marking it unread is a real request.
    for flag in ("read", "starred"):
        body = assert_success(
            await hamlet.post(
                "/messages/flags", {"messages": [mine, other], "op": "add", "flag": flag}
            )
        )
        assert body == {"result": "success", "msg": "", "messages": [mine, other], IGNORED: []}
    body = assert_success(
        await hamlet.post(
            "/messages/flags", {"messages": [mine, other], "op": "remove", "flag": "read"}
        )
    )
    assert body["messages"] == [mine, other] and body[IGNORED] == [verona.id]
    # The narrow form reports the same for the window it processed.
    params: dict[str, Any] = {
        "anchor": "newest",
        "num_before": 10,
        "num_after": 0,
        "op": "remove",
        "flag": "read",
    }
    body = assert_success(
        await hamlet.post("/messages/flags/narrow", {**params, "narrow": _narrow("Verona")})
    )
    assert (body["processed_count"], body["updated_count"], body[IGNORED]) == (1, 0, [verona.id])
    body = assert_success(
        await hamlet.post("/messages/flags/narrow", {**params, "narrow": _narrow("Denmark")})
    )
    assert body[IGNORED] == []


def _link(path_id: str) -> str:
    return f"[file](/user_uploads/{path_id})"


async def test_edit_lists_the_uploads_only_history_still_links(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    lone = await upload(env, "hamlet", name="lone.txt")
    shared = await upload(env, "hamlet", name="shared.txt")
    kept = await upload(env, "hamlet", name="kept.txt")
    content = " ".join(_link(p) for p in (lone, shared, kept))
    edited = await send_stream_message(env, "hamlet", "Denmark", content)
    await send_stream_message(env, "hamlet", "Denmark", _link(shared))
    hamlet = env.client("hamlet")
    body = assert_success(await hamlet.patch(f"/messages/{edited}", {"content": _link(kept)}))
    # Only the upload no message links any more; another message still links "shared".
    [detached] = body["detached_uploads"]
    assert (detached["path_id"], detached["name"], detached["messages"]) == (
        lone,
        "lone.txt",
        [],
    )
    assert set(detached) == {"id", "name", "path_id", "size", "create_time", "messages"}
    # Present, and empty, for an edit that detaches nothing.
    body = assert_success(await hamlet.patch(f"/messages/{edited}", {"topic": "elsewhere"}))
    assert body["detached_uploads"] == []


async def test_upload_gives_url_and_filename(env: TestEnv) -> None:
    response = await env.client("hamlet").request(
        "POST", "/user_uploads", files={"/tmp/x": ("Ünïcode report.txt", b"x", "text/plain")}
    )
    body = assert_success(response)
    assert body["url"] == body["uri"] and body["url"].startswith("/user_uploads/")
    assert body["filename"] == "Ünïcode report.txt"


async def test_export_consent_is_told_to_administrators(env: TestEnv) -> None:
    def consent(value: bool) -> Any:
        return env.client("hamlet").patch("/settings", {"allow_private_data_export": value})

    for admin in ("iago", "desdemona"):
        events = await verify_action(
            env,
            env.users[admin],
            functools.partial(consent, admin == "iago"),
            event_types=["realm_export_consent"],
        )
        expected = {"user_id": env.users["hamlet"].id, "consented": admin == "iago"}
        assert [{k: e[k] for k in expected} for e in events] == [expected]
    # Not to other users, nor to the user (whose own setting event tells them).
    for user in ("othello", "hamlet"):
        await verify_action(
            env,
            env.users[user],
            lambda: consent(True),
            event_types=["realm_export_consent"],
            num_events=0,
        )


async def _set_group(env: TestEnv, target: Stream, setting: str, user: str) -> None:
    value = {"direct_members": [env.users[user].id], "direct_subgroups": []}
    assert_success(
        await env.client("iago").patch(f"/streams/{target.id}", {setting: {"new": value}})
    )


async def _private(env: TestEnv, name: str, *, shared_history: bool = True) -> Stream:
    target = await env.subscribe("othello", name, invite_only=True)
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(stream_table)
            .where(stream_table.c.id == target.id)
            .values(history_public_to_subscribers=shared_history)
        )
    return target


async def _can_read(env: TestEnv, user: str, message_id: int, stream: str) -> bool:
    client = env.client(user)
    single = await client.get(f"/messages/{message_id}")
    page = assert_success(
        await client.get(
            "/messages",
            {"anchor": "newest", "num_before": 5, "num_after": 0, "narrow": _narrow(stream)},
        )
    )
    ids = [m["id"] for m in page["messages"]]
    if single.status_code == 200:
        assert single.json()["message"]["flags"] == ["read", "historical"]
        assert ids == [message_id]
        return True
    assert_error(single, "Invalid message(s)")
    assert ids == []
    return False


async def _can_see(env: TestEnv, user: str, target: Stream) -> bool:
    response = await env.client(user).get(f"/streams/{target.id}")
    if response.status_code == 200:
        return True
    assert_error(response, "Invalid stream ID")
    return False


@pytest.mark.parametrize("setting", ["can_subscribe_group", "can_add_subscribers_group"])
async def test_groups_granting_content_access(env: TestEnv, setting: str) -> None:
    secret = await _private(env, "Secret")
    mid = await send_stream_message(env, "othello", "Secret")
    assert not await _can_read(env, "hamlet", mid, "Secret")
    assert not await _can_see(env, "hamlet", secret)
    await _set_group(env, secret, setting, "hamlet")
    assert await _can_read(env, "hamlet", mid, "Secret")
    assert await _can_see(env, "hamlet", secret)
    hamlet = env.client("hamlet")
    # Flags of history messages, by id and by narrow (a row is made for them).
    star = {"messages": [mid], "op": "add", "flag": "starred"}
    assert assert_success(await hamlet.post("/messages/flags", star))[IGNORED] == []
    body = assert_success(
        await hamlet.post(
            "/messages/flags/narrow",
            {
                "anchor": "newest",
                "num_before": 5,
                "num_after": 0,
                "narrow": _narrow("Secret"),
                "op": "add",
                "flag": "collapsed",
            },
        )
    )
    assert body["updated_count"] == 1
    flags = assert_success(await hamlet.get(f"/messages/{mid}"))["message"]["flags"]
    assert set(flags) == {"read", "historical", "starred", "collapsed"}
    # Reading without subscribing does not make unread messages: marking unread skips it.
    unread = {"messages": [mid], "op": "remove", "flag": "read"}
    assert assert_success(await hamlet.post("/messages/flags", unread))[IGNORED] == [secret.id]
    # And subscribing oneself is allowed.
    body = assert_success(
        await hamlet.post("/users/me/subscriptions", {"subscriptions": [{"name": "Secret"}]})
    )
    assert body["subscribed"] == {"hamlet@example.com": ["Secret"]}


async def test_channel_administrators_see_but_do_not_read(env: TestEnv) -> None:
    secret = await _private(env, "Secret")
    mid = await send_stream_message(env, "othello", "Secret")
    await _set_group(env, secret, "can_administer_channel_group", "hamlet")
    assert await _can_see(env, "hamlet", secret)
    assert not await _can_read(env, "hamlet", mid, "Secret")
    # Organization administrators neither, unless subscribed.
    assert await _can_see(env, "iago", secret)
    assert not await _can_read(env, "iago", mid, "Secret")


async def test_no_content_access_to_protected_history_or_for_guests(env: TestEnv) -> None:
    protected = await _private(env, "Protected", shared_history=False)
    mid = await send_stream_message(env, "othello", "Protected")
    await _set_group(env, protected, "can_subscribe_group", "hamlet")
    # The stream is visible, but its history is only for those who received it.
    assert await _can_see(env, "hamlet", protected)
    assert not await _can_read(env, "hamlet", mid, "Protected")
    secret = await _private(env, "Secret")
    other = await send_stream_message(env, "othello", "Secret")
    await _set_group(env, secret, "can_add_subscribers_group", "polonius")
    assert not await _can_read(env, "polonius", other, "Secret")
    assert not await _can_see(env, "polonius", secret)


async def test_daily_job_marks_quiet_streams_inactive(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    async with running_env(settings, clock=clock) as env:
        quiet = await env.subscribe("hamlet", "Quiet")
        await env.subscribe("hamlet", "Busy")
        await send_stream_message(env, "hamlet", "Quiet")
        clock.advance(200 * 86400)
        await send_stream_message(env, "hamlet", "Busy")
        # Run the job's registration with a short interval rather than a day.
        monkeypatch.setattr(periodic, "INACTIVE_STREAMS_INTERVAL_SECONDS", 0.02)
        tasks = periodic.start_background_jobs(env.services)
        try:
            for _ in range(200):
                async with env.services.db.read() as conn:
                    found = await get_stream_by_id(conn, env.realm.id, quiet.id)
                assert found is not None
                if not found.is_recently_active:
                    break
                await asyncio.sleep(0.02)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        async with env.services.db.read() as conn:
            streams = {s.name: s.is_recently_active for s in await list_streams(conn, env.realm.id)}
        assert streams == {"Quiet": False, "Busy": True}
        # Run directly, the job finds nothing more to do.
        assert await periodic.mark_inactive_streams(env.services) == 0
