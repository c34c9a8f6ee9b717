"""The realm's URL comes from the configuration, never from whatever Host a request names
(``api/urls.py``): ``/server_settings``, ``/register`` and push payloads advertise it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hubbub.api.urls import configured_realm_url
from hubbub.models import User
from hubbub.settings import Settings
from tests.helpers import TestEnv, assert_success, running_env
from tests.push_bouncer import FakeBouncer

SERVED = "http://127.0.0.1:9991"

# (Host header, subdomain of the realm it selected, URL)
WITHOUT_EXTERNAL_HOST = [
    ("localhost:9991", "", "http://localhost:9991"),
    ("LOCALHOST:9991", "", "http://localhost:9991"),
    ("localhost", "", "http://localhost"),
    ("127.0.0.1:9991", "", "http://127.0.0.1:9991"),
    ("127.0.0.2:8000", "", "http://127.0.0.2:8000"),
    ("[::1]:9991", "", "http://[::1]:9991"),
    ("eng.localhost:9991", "eng", "http://eng.localhost:9991"),
    # Anything else is the client's invention: the served address instead.
    ("evil.example", "", SERVED),
    ("evil.example:9991", "", SERVED),
    ("10.1.2.3:9991", "", SERVED),
    ("[2001:db8::1]:9991", "", SERVED),
    ("localhost@evil.example", "", SERVED),
    ("localhost:9991@evil.example", "", SERVED),
    ("localhost:99x", "", SERVED),
    ("localhost.evil.example", "", SERVED),
    ("[::1]evil", "", SERVED),
    ("", "", SERVED),
    # A subdomain realm is only ever named under "localhost".
    ("eng.evil.example", "eng", "http://eng.localhost:9991"),
    ("eng.localhost.evil.example", "eng", "http://eng.localhost:9991"),
]


@pytest.mark.parametrize(("host", "subdomain", "url"), WITHOUT_EXTERNAL_HOST)
def test_configured_realm_url(host: str, subdomain: str, url: str) -> None:
    assert configured_realm_url(Settings(), subdomain, host, "http") == url


def test_configured_realm_url_with_external_host() -> None:
    settings = Settings(external_host="chat.example.com")
    for host in ("chat.example.com", "evil.example", "localhost:9991", ""):
        assert configured_realm_url(settings, "", host, "https") == "https://chat.example.com"
        assert configured_realm_url(settings, "eng", host, "https") == (
            "https://eng.chat.example.com"
        )
    # Served on a specific address, that address is this machine too.
    on_lan = Settings(host="192.168.1.5", port=8000)
    assert configured_realm_url(on_lan, "", "192.168.1.5:8000", "http") == "http://192.168.1.5:8000"
    assert configured_realm_url(on_lan, "", "evil.example", "http") == "http://192.168.1.5:8000"
    # A wildcard bind address is no name clients can use.
    anywhere = Settings(host="0.0.0.0")
    assert configured_realm_url(anywhere, "", "0.0.0.0:9991", "http") == SERVED


async def _advertised(env: TestEnv, host: str, user: str | User = "hamlet") -> tuple[str, str]:
    settings = assert_success(await env.client(host=host).get("/server_settings"))
    assert settings["realm_url"] == settings["realm_uri"]
    state = assert_success(
        await env.client(user, host=host).post("/register", {"fetch_event_types": '["realm"]'})
    )
    assert state["realm_url"] == state["realm_uri"]
    return settings["realm_uri"], state["realm_uri"]


async def test_a_foreign_host_is_not_advertised(env: TestEnv) -> None:
    # Names like "evil.example" are refused outright (tests/api/test_served_hosts.py).
    assert await _advertised(env, "10.1.2.3") == (SERVED, SERVED)
    assert await _advertised(env, "somebox:443") == (SERVED, SERVED)
    assert await _advertised(env, "localhost:9991") == ("http://localhost:9991",) * 2


async def test_subdomain_realms_still_select_and_advertise(env: TestEnv) -> None:
    eng = await env.create_realm("eng", "Engineering")
    zoe = await env.create_user("zoe@example.com", "Zoe Zoe", realm=eng)
    settings, state = await _advertised(env, "eng.localhost:9991", user=zoe)
    assert settings == state == "http://eng.localhost:9991"
    body = assert_success(await env.client(host="eng.localhost:9991").get("/server_settings"))
    assert body["realm_name"] == "Engineering"


@pytest.fixture
async def external_env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings.with_(external_host="chat.example.com")) as test_env:
        yield test_env


async def test_external_host_wins(external_env: TestEnv) -> None:
    env = external_env
    assert await _advertised(env, "chat.example.com") == ("http://chat.example.com",) * 2
    assert await _advertised(env, "127.0.0.1:9991") == ("http://chat.example.com",) * 2
    eng = await env.create_realm("eng", "Engineering")
    zoe = await env.create_user("zoe@example.com", "Zoe Zoe", realm=eng)
    settings, state = await _advertised(env, "eng.chat.example.com", user=zoe)
    assert settings == state == "http://eng.chat.example.com"


async def test_push_payloads_name_the_configured_host(
    bounced_env: TestEnv, bouncer: FakeBouncer
) -> None:
    client = bounced_env.client("hamlet", host="10.1.2.3")
    assert_success(await client.post("/users/me/android_gcm_reg_id", {"token": "fcm-1"}))
    assert_success(await client.post("/mobile_push/test_notification", {"token": "fcm-1"}))
    (sent,) = bouncer.calls("push/test_notification")
    assert sent.body["base_payload"]["realm_uri"] == SERVED
    assert sent.body["base_payload"]["server"] == "127.0.0.1:9991"
