"""Password strength wherever a password is set, which proxies' X-Forwarded-For is
believed, and the limits and headers of file downloads."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import httpx
import pytest
import uvicorn

from hubbub.clock import FakeClock
from hubbub.credentials import generate_password, is_strong_password
from hubbub.server import uvicorn_options
from hubbub.settings import Settings, SettingsError, load_settings
from hubbub.uploads.serving import FILE_CONTENT_SECURITY_POLICY
from hubbub.uploads.temporary import _sign
from tests.helpers import TestEnv, assert_error, assert_success, running_env
from tests.uploads_helpers import fetch, upload

TOO_WEAK = "The password is too weak."


@pytest.mark.parametrize("password", ["aaaaaa", "password", "abc", "123456789", "qwertyuiop"])
def test_weak_passwords_are_weak(password: str) -> None:
    assert not is_strong_password(password)


def test_strong_passwords_pass() -> None:
    assert is_strong_password("correct horse battery")
    # Longer than zxcvbn takes: only the start is estimated, which is enough.
    assert is_strong_password("x9!Kq" * 40)
    assert all(is_strong_password(generate_password()) for _ in range(20))


async def test_creating_a_user_with_a_weak_password_is_refused(env: TestEnv) -> None:
    params = {"email": "weak@example.com", "full_name": "Weak", "password": "aaaaaa"}
    assert_error(await env.client("iago").post("/users", params), TOO_WEAK)
    params["password"] = "a tolerable passphrase"
    assert_success(await env.client("iago").post("/users", params))


async def test_changing_to_a_weak_password_is_refused(env: TestEnv) -> None:
    user = await env.create_user("pw@example.com", "Pass Word", password="correct horse")
    change = {"old_password": "correct horse", "new_password": "aaaaaaaa"}
    assert_error(await env.client(user).patch("/settings", change), "New password is too weak!")


# X-Forwarded-For


async def _address_limited_logins(settings: Settings, peer: str) -> list[int]:
    """Status codes of logins, each claiming another address through X-Forwarded-For,
    through uvicorn's handling of proxy headers as ``hubbub serve`` configures it."""
    async with running_env(settings.with_(login_attempts_per_address=2)) as env:
        config = uvicorn.Config(env.app, **uvicorn_options(settings))
        config.load()
        transport = httpx.ASGITransport(app=config.loaded_app, client=(peer, 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            return [
                (
                    await http.post(
                        "/api/v1/fetch_api_key",
                        data={"username": "nobody@example.com", "password": "x"},
                        headers={"X-Forwarded-For": f"203.0.113.{n}"},
                    )
                ).status_code
                for n in range(4)
            ]


async def test_forwarded_for_is_ignored_by_default(settings: Settings) -> None:
    assert await _address_limited_logins(settings, "127.0.0.1") == [401, 401, 429, 429]


async def test_forwarded_for_is_believed_from_a_trusted_proxy(settings: Settings) -> None:
    trusted = settings.with_(trusted_proxies=("10.0.0.0/8",))
    assert await _address_limited_logins(trusted, "10.1.2.3") == [401] * 4


async def test_forwarded_for_is_ignored_from_other_peers(settings: Settings) -> None:
    trusted = settings.with_(trusted_proxies=("10.0.0.0/8",))
    assert await _address_limited_logins(trusted, "127.0.0.1") == [401, 401, 429, 429]


def test_trusted_proxies_setting() -> None:
    env = {"HUBBUB_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8,::1"}
    assert load_settings(env=env).trusted_proxies == ("127.0.0.1", "10.0.0.0/8", "::1")
    assert load_settings(env={}).trusted_proxies == ()
    with pytest.raises(SettingsError, match="HUBBUB_TRUSTED_PROXIES"):
        load_settings(env={"HUBBUB_TRUSTED_PROXIES": "proxy.example.com"})


# Downloads


@pytest.fixture
async def clock_env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings, clock=FakeClock()) as env:
        yield env


@pytest.fixture
async def limited_env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings.with_(rate_limit=4), clock=FakeClock()) as env:
        yield env


def _token(user_id: int | str, expires: int | str, path_id: str, api_key: str) -> str:
    payload = f"{user_id}:{expires}:{path_id}"
    encoded = base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")
    return f"{encoded}.{_sign(payload, api_key)}"


async def test_a_self_signed_long_lived_link_is_refused(clock_env: TestEnv) -> None:
    env = clock_env
    path_id = await upload(env, "hamlet")
    hamlet = env.users["hamlet"]
    now = int(env.services.clock.now())
    ten_years = _token(hamlet.id, now + 10 * 365 * 86400, path_id, hamlet.api_key)
    assert_error(
        await fetch(env, f"/user_uploads/temporary/{ten_years}/zulip.txt"), "Invalid token"
    )
    fair = _token(hamlet.id, now + 30, path_id, hamlet.api_key)
    assert (await fetch(env, f"/user_uploads/temporary/{fair}/zulip.txt")).content == b"zulip!"


@pytest.mark.parametrize("user_id", ["9" * 30, "-1", "0", str(2**31)])
async def test_an_out_of_range_id_in_a_link_is_a_400(clock_env: TestEnv, user_id: str) -> None:
    env = clock_env
    path_id = await upload(env, "hamlet")
    token = _token(user_id, int(env.services.clock.now()) + 30, path_id, "k" * 32)
    response = await fetch(env, f"/user_uploads/temporary/{token}/zulip.txt")
    assert_error(response, "Invalid token")


async def test_downloads_carry_a_content_security_policy(clock_env: TestEnv) -> None:
    env = clock_env
    path_id = await upload(env, "hamlet", b"<script>alert(1)</script>", "x.html", "text/html")
    response = await fetch(env, f"/user_uploads/{path_id}", "hamlet")
    assert response.status_code == 200
    assert response.headers["Content-Security-Policy"] == FILE_CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in FILE_CONTENT_SECURITY_POLICY
    assert response.headers["X-Content-Type-Options"] == "nosniff"


async def test_downloads_count_against_the_users_rate_limit(limited_env: TestEnv) -> None:
    env = limited_env
    path_id = await upload(env, "hamlet")
    statuses = [
        (await fetch(env, f"/user_uploads/{path_id}", "hamlet")).status_code for _ in range(5)
    ]
    # The upload itself was the first of the user's four requests.
    assert statuses == [200, 200, 200, 429, 429]
    # Someone else is not held back.
    assert (await fetch(env, f"/user_uploads/{path_id}", "iago")).status_code in (200, 403)
