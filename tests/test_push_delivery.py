"""Push notifications for new messages: what ``enqueue_message_push`` queues and what
``workers/push_delivery.run_once`` sends to the bouncer (``remotes/push/notify``),
driven by a fake clock."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.clock import FakeClock
from hubbub.db.tables import push_device, push_notification_queue
from hubbub.push.bouncer import realm_uuid, user_uuid
from hubbub.settings import Settings
from hubbub.workers import push_delivery
from hubbub.workers.push_delivery import run_once
from tests.helpers import TestEnv, assert_success, running_env
from tests.messages_helpers import send_direct_message, send_stream_message
from tests.push_bouncer import APNS_TOKEN, FakeBouncer, with_bouncer


@pytest.fixture
async def env(settings: Settings, bouncer: FakeBouncer) -> AsyncIterator[TestEnv]:
    async with running_env(with_bouncer(settings, bouncer), clock=FakeClock()) as test_env:
        for name in ("hamlet", "othello", "iago"):
            await test_env.subscribe(name, "Denmark")
        # Hamlet has an Android phone and an iPhone; nobody else has a device.
        client = test_env.client("hamlet")
        assert_success(await client.post("/users/me/android_gcm_reg_id", {"token": "fcm-1"}))
        assert_success(
            await client.post(
                "/users/me/apns_device_token", {"token": APNS_TOKEN, "appid": "org.zulip.Zulip"}
            )
        )
        yield test_env


async def _queued(env: TestEnv) -> list[tuple[int, int, str]]:
    q = push_notification_queue
    async with env.services.db.read() as conn:
        rows = await conn.execute(
            sa.select(q.c.user_profile_id, q.c.message_id, q.c.trigger).order_by(q.c.id)
        )
        return [(r[0], r[1], r[2]) for r in rows]


async def _deliver(env: TestEnv) -> int:
    env.advance(3)
    return await run_once(env.services)


def _notified(bouncer: FakeBouncer) -> list[dict[str, Any]]:
    return [r.body for r in bouncer.calls("push/notify")]


async def test_direct_message_is_pushed(env: TestEnv, bouncer: FakeBouncer) -> None:
    hamlet, othello = env.users["hamlet"], env.users["othello"]
    message_id = await send_direct_message(env, "othello", ["hamlet"], "Hi **there** :smile:")
    assert await _queued(env) == [(hamlet.id, message_id, "direct_message")]
    # Not due yet.
    assert await run_once(env.services) == 0
    assert _notified(bouncer) == []

    assert await _deliver(env) == 1
    (body,) = _notified(bouncer)
    settings = env.services.settings
    assert body["user_uuid"] == user_uuid(settings, hamlet.id)
    assert body["user_id"] == hamlet.id
    assert body["realm_uuid"] == realm_uuid(settings, env.realm.id)
    assert body["android_devices"] == ["fcm-1"]
    assert body["apple_devices"] == [APNS_TOKEN]
    assert body["gcm_options"] == {"priority": "high"}
    gcm = body["gcm_payload"]
    assert gcm["event"] == "message"
    assert gcm["zulip_message_id"] == message_id
    assert gcm["recipient_type"] == "private"
    assert "pm_users" not in gcm
    assert gcm["sender_id"] == othello.id
    assert gcm["sender_email"] == othello.email
    assert gcm["sender_full_name"] == "Othello"
    assert gcm["sender_avatar_url"].startswith("https://")
    assert gcm["content"] == "Hi there \U0001f642"
    assert gcm["content_truncated"] is False
    assert gcm["realm_name"] == "Hubbub"
    assert gcm["realm_id"] == env.realm.id
    assert gcm["user_id"] == hamlet.id
    assert gcm["realm_uri"].startswith("http")
    apns = body["apns_payload"]
    assert apns["alert"] == {"title": "Othello", "subtitle": "", "body": "Hi there \U0001f642"}
    assert apns["custom"]["zulip"]["message_ids"] == [message_id]
    assert apns["custom"]["zulip"]["realm_name"] == "Hubbub"
    assert await _queued(env) == []
    # Delivered once only.
    assert await _deliver(env) == 0


async def test_group_direct_message_payload(env: TestEnv, bouncer: FakeBouncer) -> None:
    ids = sorted(env.users[n].id for n in ("hamlet", "othello", "iago"))
    await send_direct_message(env, "othello", ["hamlet", "iago"], "x" * 250)
    assert await _deliver(env) == 1
    (body,) = _notified(bouncer)
    assert body["gcm_payload"]["pm_users"] == ",".join(map(str, ids))
    assert body["gcm_payload"]["content"] == "x" * 200 + "…"
    assert body["gcm_payload"]["content_truncated"] is True
    assert body["apns_payload"]["alert"]["title"] == "Hamlet, Iago, Othello"
    assert body["apns_payload"]["alert"]["subtitle"] == "Othello:"


async def test_stream_messages_follow_settings(env: TestEnv, bouncer: FakeBouncer) -> None:
    hamlet = env.users["hamlet"]
    # A plain stream message: stream push notifications are off by default.
    await send_stream_message(env, "othello", "Denmark", "hello")
    mention = await send_stream_message(env, "othello", "Denmark", "@**Hamlet** look", "boats")
    wildcard = await send_stream_message(env, "othello", "Denmark", "@**all** look", "sea")
    # Being mentioned made Hamlet follow "boats" (automatically_follow_topics_where_mentioned,
    # level 235): a wildcard there is the followed-topic variant.
    in_followed = await send_stream_message(env, "othello", "Denmark", "@**all** hey", "boats")
    # The sender is never notified of their own message.
    await send_stream_message(env, "hamlet", "Denmark", "@**Hamlet** me")
    assert await _queued(env) == [
        (hamlet.id, mention, "mentioned"),
        (hamlet.id, wildcard, "stream_wildcard_mentioned"),
        (hamlet.id, in_followed, "stream_wildcard_followed"),
    ]
    assert await _deliver(env) == 3
    first, second, third = _notified(bouncer)
    assert third["apns_payload"]["alert"]["subtitle"] == "Othello mentioned everyone:"
    assert first["gcm_payload"]["recipient_type"] == "stream"
    assert first["gcm_payload"]["stream"] == "Denmark"
    assert first["gcm_payload"]["topic"] == "boats"
    assert first["apns_payload"]["alert"]["title"] == "#Denmark > boats"
    assert first["apns_payload"]["alert"]["subtitle"] == "Othello mentioned you:"
    assert second["apns_payload"]["alert"]["subtitle"] == "Othello mentioned everyone:"

    client = env.client("hamlet")
    stream_id = int(first["gcm_payload"]["stream_id"])
    # A muted topic silences wildcard mentions (personal mentions still come through).
    assert_success(
        await client.post(
            "/user_topics", {"stream_id": stream_id, "topic": "boats", "visibility_policy": 1}
        )
    )
    await send_stream_message(env, "othello", "Denmark", "@**all** again", "boats")
    assert await _queued(env) == []
    # A followed topic notifies of every message.
    assert_success(
        await client.post(
            "/user_topics", {"stream_id": stream_id, "topic": "ships", "visibility_policy": 3}
        )
    )
    followed = await send_stream_message(env, "othello", "Denmark", "hi", "ships")
    # The stream's own push setting.
    assert_success(
        await client.post(
            "/users/me/subscriptions/properties",
            {
                "subscription_data": json.dumps(
                    [{"stream_id": stream_id, "property": "push_notifications", "value": True}]
                )
            },
        )
    )
    pushed = await send_stream_message(env, "othello", "Denmark", "hi", "other")
    assert await _queued(env) == [
        (hamlet.id, followed, "followed_topic_push_notify"),
        (hamlet.id, pushed, "stream_push_notify"),
    ]


async def test_user_settings_can_turn_pushes_off(env: TestEnv, bouncer: FakeBouncer) -> None:
    client = env.client("hamlet")
    assert_success(await client.patch("/settings", {"enable_offline_push_notifications": False}))
    await send_direct_message(env, "othello", ["hamlet"])
    await send_stream_message(env, "othello", "Denmark", "@**Hamlet** hi")
    assert await _queued(env) == []


async def test_muted_sender_and_read_messages_are_not_pushed(
    env: TestEnv, bouncer: FakeBouncer
) -> None:
    client = env.client("hamlet")
    assert_success(await client.post(f"/users/me/muted_users/{env.users['iago'].id}"))
    await send_direct_message(env, "iago", ["hamlet"])
    assert await _queued(env) == []

    message_id = await send_direct_message(env, "othello", ["hamlet"])
    assert len(await _queued(env)) == 1
    assert_success(
        await client.post(
            "/messages/flags",
            {"messages": json.dumps([message_id]), "op": "add", "flag": "read"},
        )
    )
    assert await _deliver(env) == 0
    assert _notified(bouncer) == []
    assert await _queued(env) == []


async def test_online_users_follow_their_online_setting(env: TestEnv, bouncer: FakeBouncer) -> None:
    client = env.client("hamlet")
    assert_success(await client.post("/users/me/presence", {"status": "active"}))
    # Zulip's default: pushed even while online.
    await send_direct_message(env, "othello", ["hamlet"])
    assert await _deliver(env) == 1

    assert_success(await client.patch("/settings", {"enable_online_push_notifications": False}))
    assert_success(await client.post("/users/me/presence", {"status": "active"}))
    await send_direct_message(env, "othello", ["hamlet"])
    assert await _deliver(env) == 0
    # Offline once no activity was reported for 140 s.
    await send_direct_message(env, "othello", ["hamlet"])
    env.advance(140)
    assert await _deliver(env) == 1
    assert len(_notified(bouncer)) == 2


async def test_failing_bouncer_retries_then_drops(env: TestEnv, bouncer: FakeBouncer) -> None:
    error = (502, {"result": "error", "msg": "bad gateway"})
    bouncer.fail_next.extend([error, error])
    await send_direct_message(env, "othello", ["hamlet"])
    assert await _deliver(env) == 0
    assert [t for _, _, t in await _queued(env)] == ["direct_message:1"]
    # Backed off: not due again at once.
    assert await run_once(env.services) == 0
    assert len(bouncer.calls("push/notify")) == 1
    env.advance(push_delivery.RETRY_BACKOFF_SECONDS)
    assert await run_once(env.services) == 0
    assert [t for _, _, t in await _queued(env)] == ["direct_message:2"]
    env.advance(2 * push_delivery.RETRY_BACKOFF_SECONDS)
    assert await run_once(env.services) == 1
    assert len(bouncer.calls("push/notify")) == 3
    assert await _queued(env) == []

    bouncer.fail_next.extend([error] * push_delivery.MAX_ATTEMPTS)
    await send_direct_message(env, "othello", ["hamlet"])
    for _ in range(push_delivery.MAX_ATTEMPTS):
        env.advance(push_delivery.MAX_ATTEMPTS * push_delivery.RETRY_BACKOFF_SECONDS)
        assert await run_once(env.services) == 0
    assert await _queued(env) == []  # dropped after MAX_ATTEMPTS


async def test_dead_tokens_reported_by_the_bouncer_are_forgotten(
    env: TestEnv, bouncer: FakeBouncer
) -> None:
    bouncer.dead_tokens.add("fcm-1")
    await send_direct_message(env, "othello", ["hamlet"])
    assert await _deliver(env) == 1
    async with env.services.db.read() as conn:
        tokens = (await conn.execute(sa.select(push_device.c.token))).scalars().all()
    assert tokens == [APNS_TOKEN]


async def test_nothing_queued_or_sent_without_devices_or_bouncer(
    settings: Settings, bouncer: FakeBouncer
) -> None:
    async with running_env(settings, clock=FakeClock()) as env:
        await send_direct_message(env, "othello", ["hamlet"])
        assert await _queued(env) == []  # nobody has a device
        assert_success(
            await env.client("hamlet").post("/users/me/android_gcm_reg_id", {"token": "t"})
        )
        await send_direct_message(env, "othello", ["hamlet"])
        assert len(await _queued(env)) == 1
        # No bouncer configured: the queue is emptied without sending anything.
        assert await _deliver(env) == 0
        assert await _queued(env) == []
    assert bouncer.received == []
