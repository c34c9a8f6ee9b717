"""``POST /mobile_push/test_notification`` (feature level 217) and whether the server
reports push notifications as configured."""

from __future__ import annotations

from hubbub.push.bouncer import realm_uuid, user_uuid
from tests.helpers import TestEnv, assert_error, assert_success
from tests.push_bouncer import APNS_TOKEN, ORG_ID, ORG_KEY, FakeBouncer

TEST = "/mobile_push/test_notification"


async def test_test_notification_to_one_and_all_devices(
    bounced_env: TestEnv, bouncer: FakeBouncer
) -> None:
    env = bounced_env
    hamlet = env.users["hamlet"]
    client = env.client("hamlet")
    assert_success(
        await client.post(
            "/users/me/apns_device_token", {"token": APNS_TOKEN, "appid": "org.zulip.Zulip"}
        )
    )
    assert_success(await client.post("/users/me/android_gcm_reg_id", {"token": "fcm-1"}))

    assert_success(await client.post(TEST, {"token": "fcm-1"}))
    (one,) = bouncer.calls("push/test_notification")
    assert one.credentials == (ORG_ID, ORG_KEY)
    assert one.content_type == "application/json"
    settings = env.services.settings
    assert one.body == {
        "realm_uuid": realm_uuid(settings, env.realm.id),
        "user_uuid": user_uuid(settings, hamlet.id),
        "user_id": hamlet.id,
        "token": "fcm-1",
        "token_kind": 2,
        "base_payload": {
            "server": "localhost",
            "realm_id": env.realm.id,
            "realm_uri": "http://localhost",
            "realm_name": "Hubbub",
            "user_id": hamlet.id,
        },
    }

    assert_success(await client.post(TEST))
    sent = bouncer.calls("push/test_notification")[1:]
    assert sorted((r.body["token"], r.body["token_kind"]) for r in sent) == [
        (APNS_TOKEN, 1),
        ("fcm-1", 2),
    ]


async def test_unknown_devices(bounced_env: TestEnv, bouncer: FakeBouncer) -> None:
    env = bounced_env
    client = env.client("hamlet")
    assert_error(
        await client.post(TEST, {"token": "nope"}),
        "Device not recognized",
        code="INVALID_PUSH_DEVICE_TOKEN",
    )
    # Othello's device is not Hamlet's.
    assert_success(
        await env.client("othello").post("/users/me/android_gcm_reg_id", {"token": "o-1"})
    )
    assert_error(
        await client.post(TEST, {"token": "o-1"}),
        "Device not recognized",
        code="INVALID_PUSH_DEVICE_TOKEN",
    )
    assert_success(await client.post("/users/me/android_gcm_reg_id", {"token": "gone"}))
    bouncer.unknown_tokens.add("gone")
    assert_error(
        await client.post(TEST, {"token": "gone"}),
        "Device not recognized by the push bouncer",
        code="INVALID_REMOTE_PUSH_DEVICE_TOKEN",
    )
    before = len(bouncer.calls("push/test_notification"))
    # No device at all: Zulip 8.0 succeeds without contacting the bouncer.
    assert_success(await env.client("iago").post(TEST))
    assert len(bouncer.calls("push/test_notification")) == before


async def test_not_configured(env: TestEnv) -> None:
    """Without a bouncer the test notification succeeds having sent nothing, with or
    without a token (Zulip 10.2 drops it when it has no way to deliver); only an unknown
    token is an error."""
    client = env.client("hamlet")
    # No device at all, and no token.
    assert_success(await client.post(TEST))
    assert_success(await client.post("/users/me/android_gcm_reg_id", {"token": "fcm-1"}))
    assert_success(await client.post(TEST))
    assert_success(await client.post(TEST, {"token": "fcm-1"}))
    assert_error(
        await client.post(TEST, {"token": "other"}),
        "Device not recognized",
        code="INVALID_PUSH_DEVICE_TOKEN",
    )
    # Bots have no phones, configured or not.
    bot = await env.create_user("bot@example.com", "Bot Bot", bot_owner=env.users["hamlet"])
    assert_error(await env.client(bot).post(TEST), "This endpoint does not accept bot requests.")
    settings = assert_success(await env.client().get("/server_settings"))
    assert settings["push_notifications_enabled"] is False
    state = assert_success(await client.post("/register", {"fetch_event_types": '["realm"]'}))
    assert state["realm_push_notifications_enabled"] is False


async def test_server_settings_when_configured(bounced_env: TestEnv) -> None:
    settings = assert_success(await bounced_env.client().get("/server_settings"))
    assert settings["push_notifications_enabled"] is True
    state = assert_success(
        await bounced_env.client("hamlet").post("/register", {"fetch_event_types": '["realm"]'})
    )
    assert state["realm_push_notifications_enabled"] is True
