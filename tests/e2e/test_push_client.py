"""Mobile push end to end: the official client registers devices and asks for a test
notification from a real ``hubbub serve`` configured (HUBBUB_PUSH_BOUNCER_*) with a fake
bouncer; a direct message then reaches the bouncer through the background scheduler."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import zulip

from tests.e2e.client import assert_error, assert_ok, close, make_client
from tests.e2e.conftest import HubbubServer, hubbub_env, serving
from tests.push_bouncer import ORG_ID, ORG_KEY, FakeBouncer, running_bouncer, wait_for


@pytest.fixture
def bouncer() -> Iterator[FakeBouncer]:
    with running_bouncer() as fake:
        yield fake


@pytest.fixture
def pushing_server(
    tmp_path: Path, hubbub_database_url: str | None, bouncer: FakeBouncer
) -> Iterator[HubbubServer]:
    env = hubbub_env(
        HUBBUB_PUSH_BOUNCER_URL=bouncer.url,
        HUBBUB_PUSH_BOUNCER_ORG_ID=ORG_ID,
        HUBBUB_PUSH_BOUNCER_ORG_KEY=ORG_KEY,
    )
    with serving(tmp_path / "data", database_url=hubbub_database_url, env=env) as server:
        yield server
    assert server.process.returncode == 0, server.stderr()


@pytest.fixture
def owner(pushing_server: HubbubServer) -> Iterator[zulip.Client]:
    client = make_client(config_file=str(pushing_server.data_dir / "zuliprc"))
    try:
        yield client
    finally:
        close(client)


def test_devices_and_test_notification(owner: zulip.Client, bouncer: FakeBouncer) -> None:
    settings = owner.call_endpoint(url="server_settings", method="GET")
    assert settings["push_notifications_enabled"] is True

    assert_ok(
        owner.call_endpoint(
            url="users/me/android_gcm_reg_id", method="POST", request={"token": "fcm-e2e"}
        )
    )
    (registered,) = bouncer.calls("push/register")
    assert registered.credentials == (ORG_ID, ORG_KEY)
    assert registered.body["token"] == "fcm-e2e"

    assert_ok(
        owner.call_endpoint(
            url="mobile_push/test_notification", method="POST", request={"token": "fcm-e2e"}
        )
    )
    (test,) = bouncer.calls("push/test_notification")
    assert test.body["token"] == "fcm-e2e"
    assert test.body["base_payload"]["realm_name"]
    assert_error(
        owner.call_endpoint(
            url="mobile_push/test_notification", method="POST", request={"token": "unknown"}
        ),
        "INVALID_PUSH_DEVICE_TOKEN",
        "Device not recognized",
    )
    bouncer.unknown_tokens.add("fcm-e2e")
    assert_error(
        owner.call_endpoint(url="mobile_push/test_notification", method="POST"),
        "INVALID_REMOTE_PUSH_DEVICE_TOKEN",
        "Device not recognized by the push bouncer",
    )

    bouncer.unknown_tokens.discard("fcm-e2e")
    assert_ok(
        owner.call_endpoint(
            url="users/me/android_gcm_reg_id", method="DELETE", request={"token": "fcm-e2e"}
        )
    )
    assert len(bouncer.calls("push/unregister")) == 1


def test_direct_message_reaches_the_bouncer(
    owner: zulip.Client, pushing_server: HubbubServer, bouncer: FakeBouncer
) -> None:
    assert_ok(
        owner.create_user(
            {
                "email": "cordelia@example.com",
                "password": "a long password",
                "full_name": "Cordelia",
            }
        )
    )
    key = assert_ok(
        owner.call_endpoint(
            url="fetch_api_key",
            method="POST",
            request={"username": "cordelia@example.com", "password": "a long password"},
        )
    )["api_key"]
    cordelia = make_client(email="cordelia@example.com", api_key=key, site=pushing_server.url)
    try:
        assert_ok(
            cordelia.call_endpoint(
                url="users/me/android_gcm_reg_id", method="POST", request={"token": "c-phone"}
            )
        )
        me = assert_ok(cordelia.get_profile())
        assert_ok(
            owner.send_message(
                {"type": "private", "to": [me["user_id"]], "content": "Are you there?"}
            )
        )
        wait_for(lambda: bool(bouncer.calls("push/notify")), timeout=15)
        (notify,) = bouncer.calls("push/notify")
        assert notify.body["android_devices"] == ["c-phone"]
        assert notify.body["gcm_payload"]["content"] == "Are you there?"
        assert notify.body["gcm_payload"]["event"] == "message"
        assert notify.body["user_id"] == me["user_id"]
    finally:
        close(cordelia)
