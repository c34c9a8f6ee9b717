"""Registering and removing mobile push devices (APNs tokens and FCM registration ids),
locally and with the push notification bouncer."""

from __future__ import annotations

import sqlalchemy as sa

from hubbub.db.tables import push_device
from hubbub.push.bouncer import realm_uuid, user_uuid
from hubbub.settings import Settings
from tests.helpers import TestEnv, assert_error, assert_success, running_env
from tests.push_bouncer import APNS_TOKEN, ORG_ID, ORG_KEY, FakeBouncer

APNS = "/users/me/apns_device_token"
FCM = "/users/me/android_gcm_reg_id"
APP_ID = "org.zulip.Zulip"


async def _devices(env: TestEnv, user: str) -> list[tuple[int, str, str | None]]:
    async with env.services.db.read() as conn:
        rows = await conn.execute(
            sa.select(push_device.c.kind, push_device.c.token, push_device.c.ios_app_id)
            .where(push_device.c.user_profile_id == env.users[user].id)
            .order_by(push_device.c.id)
        )
        return [(r.kind, r.token, r.ios_app_id) for r in rows]


async def test_register_and_remove_devices_locally(env: TestEnv) -> None:
    hamlet = env.client("hamlet")
    assert_success(await hamlet.post(APNS, {"token": APNS_TOKEN, "appid": APP_ID}))
    assert_success(await hamlet.post(FCM, {"token": "fcm-token-1"}))
    # Registering again is harmless.
    assert_success(await hamlet.post(FCM, {"token": "fcm-token-1"}))
    assert await _devices(env, "hamlet") == [(1, APNS_TOKEN, APP_ID), (2, "fcm-token-1", None)]
    assert await _devices(env, "othello") == []

    assert_success(await hamlet.delete(FCM, {"token": "fcm-token-1"}))
    assert await _devices(env, "hamlet") == [(1, APNS_TOKEN, APP_ID)]
    # The token is registered for APNs, not FCM, and not for Othello.
    assert_error(await hamlet.delete(FCM, {"token": APNS_TOKEN}), "Token does not exist")
    assert_error(
        await env.client("othello").delete(APNS, {"token": APNS_TOKEN}), "Token does not exist"
    )
    assert_success(await hamlet.delete(APNS, {"token": APNS_TOKEN}))
    assert await _devices(env, "hamlet") == []


async def test_token_validation(env: TestEnv) -> None:
    hamlet = env.client("hamlet")
    for path, extra in ((APNS, {"appid": APP_ID}), (FCM, {})):
        assert_error(
            await hamlet.post(path, {"token": "", **extra}), "Empty or invalid length token"
        )
        assert_error(
            await hamlet.post(path, {"token": "a" * 4097, **extra}),
            "Empty or invalid length token",
        )
        assert_error(await hamlet.delete(path, {"token": ""}), "Empty or invalid length token")
    assert_error(await hamlet.post(APNS, {"token": "abc", "appid": APP_ID}), "Invalid APNS token")
    assert_error(
        await hamlet.post(APNS, {"token": APNS_TOKEN, "appid": "org.zulip/Zulip"}),
        "appid has invalid format",
    )
    assert_error(
        await hamlet.post(APNS, {"token": APNS_TOKEN}),
        "Missing 'appid' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert_error(
        await hamlet.post(FCM, {}), "Missing 'token' argument", code="REQUEST_VARIABLE_MISSING"
    )
    assert await _devices(env, "hamlet") == []


async def test_bots_cannot_register_devices(env: TestEnv) -> None:
    bot = await env.create_user("bot-bot@example.com", "Bot", bot_owner=env.users["hamlet"])
    assert_error(
        await env.client(bot).post(FCM, {"token": "x"}),
        "This endpoint does not accept bot requests.",
    )


async def test_registration_is_forwarded_to_the_bouncer(
    bounced_env: TestEnv, bouncer: FakeBouncer
) -> None:
    env = bounced_env
    hamlet = env.users["hamlet"]
    settings = env.services.settings
    client = env.client("hamlet")
    assert_success(await client.post(APNS, {"token": APNS_TOKEN, "appid": APP_ID}))
    assert_success(await client.post(FCM, {"token": "fcm-token-1"}))
    registered = bouncer.calls("push/register")
    assert len(registered) == 2
    assert all(r.credentials == (ORG_ID, ORG_KEY) for r in registered)
    assert registered[0].content_type.startswith("application/x-www-form-urlencoded")
    assert registered[0].user_agent.startswith("ZulipServer/10.2")
    assert registered[0].body == {
        "server_uuid": ORG_ID,
        "user_uuid": user_uuid(settings, hamlet.id),
        "realm_uuid": realm_uuid(settings, hamlet.realm_id),
        "user_id": str(hamlet.id),
        "token": APNS_TOKEN,
        "token_kind": "1",
        "ios_app_id": APP_ID,
    }
    assert "ios_app_id" not in registered[1].body
    assert registered[1].body["token_kind"] == "2"
    assert await _devices(env, "hamlet") == [(1, APNS_TOKEN, APP_ID), (2, "fcm-token-1", None)]

    assert_success(await client.delete(FCM, {"token": "fcm-token-1"}))
    (unregistered,) = bouncer.calls("push/unregister")
    assert unregistered.body["token"] == "fcm-token-1"
    assert unregistered.body["token_kind"] == "2"
    assert unregistered.body["user_uuid"] == user_uuid(settings, hamlet.id)

    # With a bouncer, an unknown token is the bouncer's to reject (Zulip's rule).
    bouncer.unknown_tokens.add("never-registered")
    assert_error(await client.delete(FCM, {"token": "never-registered"}), "Token does not exist")


async def test_bouncer_failures_are_reported(bounced_env: TestEnv, bouncer: FakeBouncer) -> None:
    client = bounced_env.client("hamlet")
    bouncer.fail_next.append((500, {"result": "error", "msg": "boom"}))
    assert_error(
        await client.post(FCM, {"token": "fcm-token-1"}),
        "Received 500 from push notification bouncer",
        status=502,
    )
    bouncer.fail_next.append(
        (401, {"result": "error", "msg": "Invalid server", "code": "INVALID_ZULIP_SERVER"})
    )
    assert_error(
        await client.post(FCM, {"token": "fcm-token-2"}),
        "Push notifications bouncer error: Invalid server",
    )


async def test_unreachable_bouncer(settings: Settings) -> None:
    from tests.e2e.conftest import free_port

    configured = settings.with_(
        push_bouncer_url=f"http://127.0.0.1:{free_port()}",
        push_bouncer_org_id=ORG_ID,
        push_bouncer_org_key=ORG_KEY,
    )
    async with running_env(configured) as env:
        assert_error(
            await env.client("hamlet").post(FCM, {"token": "t"}),
            "ConnectError while trying to connect to push notification bouncer",
            status=502,
        )
