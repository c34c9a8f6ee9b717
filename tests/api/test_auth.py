"""Authentication: HTTP Basic on /api/v1, the realm from the Host, ``POST /fetch_api_key``."""

from __future__ import annotations

import sqlalchemy as sa

from hubbub.api.auth import subdomain_from_host
from hubbub.db.tables import realm as realm_table
from hubbub.models import Role
from tests.helpers import TestEnv, assert_error, assert_success, basic_auth


def test_subdomain_from_host() -> None:
    assert subdomain_from_host("localhost:9991", "") == ""
    assert subdomain_from_host("127.0.0.1:9991", "") == ""
    assert subdomain_from_host("[::1]:9991", "") == ""
    assert subdomain_from_host("eng.localhost:9991", "") == "eng"
    assert subdomain_from_host("chat.example.com", "") == ""
    assert subdomain_from_host("eng.chat.example.com", "chat.example.com") == "eng"
    assert subdomain_from_host("EnG.Chat.Example.com:443", "chat.example.com:443") == "eng"
    assert subdomain_from_host("chat.example.com", "chat.example.com") == ""


async def _unauthorized(env: TestEnv, headers: dict[str, str], msg: str) -> None:
    response = await env.client(headers=headers).get("/users/me")
    assert_error(response, msg, status=401, code="UNAUTHORIZED")
    assert response.headers["WWW-Authenticate"] == 'Basic realm="zulip"'


async def test_missing_credentials(env: TestEnv) -> None:
    await _unauthorized(env, {}, "Not logged in: API authentication or user session required")


async def test_bad_credentials(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    await _unauthorized(
        env, {"Authorization": basic_auth(hamlet.email, "x" * 32)}, "Invalid API key"
    )
    await _unauthorized(
        env, {"Authorization": basic_auth(hamlet.email, "short")}, "Malformed API key"
    )
    # The right key under someone else's email is still wrong.
    await _unauthorized(
        env, {"Authorization": basic_auth("iago@example.com", hamlet.api_key)}, "Invalid API key"
    )
    await _unauthorized(
        env, {"Authorization": "Basic !!!not-base64"}, "Invalid authorization header for basic auth"
    )
    response = await env.client(headers={"Authorization": "Bearer abc"}).get("/users/me")
    assert_error(response, "This endpoint requires HTTP basic authentication.")


async def test_email_is_case_insensitive(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    client = env.client(headers={"Authorization": basic_auth("HAMLET@Example.com", hamlet.api_key)})
    assert assert_success(await client.get("/users/me"))["user_id"] == hamlet.id


async def test_deactivated_realm_is_refused(env: TestEnv) -> None:
    async with env.services.db.write() as conn:
        await conn.execute(sa.update(realm_table).values(deactivated=True))
    response = await env.client("hamlet").get("/users/me")
    assert_error(
        response, "This organization has been deactivated", status=401, code="REALM_DEACTIVATED"
    )


async def test_users_belong_to_their_subdomain(env: TestEnv) -> None:
    zephyr = await env.create_realm("zephyr", "Zephyr")
    zoe = await env.create_user("zoe@zephyr.example", "Zoe", realm=zephyr, role=Role.OWNER)
    body = assert_success(await env.client(zoe, host="zephyr.localhost:9991").get("/users"))
    assert [m["email"] for m in body["members"]] == ["zoe@zephyr.example"]
    # The same credentials on the root domain belong to no account there.
    response = await env.client(zoe, host="localhost").get("/users/me")
    assert_error(response, "Account is not associated with this subdomain")
    response = await env.client("hamlet", host="zephyr.localhost").get("/users")
    assert_error(response, "Account is not associated with this subdomain")


async def test_same_email_in_two_realms(env: TestEnv) -> None:
    zephyr = await env.create_realm("zephyr", "Zephyr")
    twin = await env.create_user("hamlet@example.com", "Zephyr Hamlet", realm=zephyr)
    body = assert_success(await env.client(twin, host="zephyr.localhost").get("/users/me"))
    assert body["user_id"] == twin.id and body["full_name"] == "Zephyr Hamlet"
    body = assert_success(await env.client("hamlet").get("/users/me"))
    assert body["user_id"] == env.users["hamlet"].id


# POST /fetch_api_key


async def test_fetch_api_key(env: TestEnv) -> None:
    user = await env.create_user("pw@example.com", "Pass Word", password="correct horse")
    body = assert_success(
        await env.client().post(
            "/fetch_api_key", {"username": " PW@example.com ", "password": "correct horse"}
        )
    )
    assert body["api_key"] == user.api_key
    assert body["email"] == "pw@example.com"
    assert body["user_id"] == user.id


async def test_fetch_api_key_errors(env: TestEnv) -> None:
    await env.create_user("pw@example.com", "Pass Word", password="correct horse")
    client = env.client()
    assert_error(
        await client.post("/fetch_api_key", {"username": "pw@example.com", "password": "wrong"}),
        "Your username or password is incorrect",
        status=401,
        code="AUTHENTICATION_FAILED",
    )
    assert_error(
        await client.post("/fetch_api_key", {"username": "nobody@example.com", "password": "x"}),
        "Your username or password is incorrect",
        status=401,
        code="AUTHENTICATION_FAILED",
    )
    assert_error(
        await client.post("/fetch_api_key", {"username": "not an email", "password": "x"}),
        "Enter a valid email address.",
    )
    body = assert_error(
        await client.post("/fetch_api_key", {"username": "pw@example.com"}),
        "Missing 'password' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert body["var_name"] == "password"
    # An account without a password cannot log in with one.
    assert_error(
        await client.post("/fetch_api_key", {"username": "hamlet@example.com", "password": ""}),
        "Your username or password is incorrect",
        status=401,
        code="AUTHENTICATION_FAILED",
    )


async def test_fetch_api_key_deactivated_user_and_realm(env: TestEnv) -> None:
    user = await env.create_user("pw@example.com", "Pass Word", password="correct horse")
    assert_success(await env.client("iago").delete(f"/users/{user.id}"))
    creds = {"username": "pw@example.com", "password": "correct horse"}
    assert_error(
        await env.client().post("/fetch_api_key", creds),
        "Account is deactivated",
        status=401,
        code="USER_DEACTIVATED",
    )
    async with env.services.db.write() as conn:
        await conn.execute(sa.update(realm_table).values(deactivated=True))
    assert_error(
        await env.client().post("/fetch_api_key", creds),
        "This organization has been deactivated",
        status=401,
        code="REALM_DEACTIVATED",
    )


async def test_fetch_api_key_subdomains(env: TestEnv) -> None:
    zephyr = await env.create_realm("zephyr", "Zephyr")
    await env.create_user("zoe@zephyr.example", "Zoe", realm=zephyr, password="zoe-password")
    creds = {"username": "zoe@zephyr.example", "password": "zoe-password"}
    assert_error(
        await env.client().post("/fetch_api_key", creds),
        "Invalid subdomain",
        status=404,
        code="NONEXISTENT_SUBDOMAIN",
    )
    assert_error(
        await env.client(host="nowhere.localhost").post("/fetch_api_key", creds),
        "Invalid subdomain",
        status=404,
        code="NONEXISTENT_SUBDOMAIN",
    )
    body = assert_success(await env.client(host="zephyr.localhost").post("/fetch_api_key", creds))
    assert body["email"] == "zoe@zephyr.example"


async def test_fetch_api_key_password_auth_disabled(env: TestEnv) -> None:
    await env.create_user("pw@example.com", "Pass Word", password="correct horse")
    async with env.services.db.write() as conn:
        await conn.execute(sa.update(realm_table).values(password_auth_enabled=False))
    assert_error(
        await env.client().post(
            "/fetch_api_key", {"username": "pw@example.com", "password": "correct horse"}
        ),
        "Password authentication is disabled in this organization",
        status=401,
        code="PASSWORD_AUTH_DISABLED",
    )
    body = assert_success(await env.client().get("/server_settings"))
    assert body["authentication_methods"]["password"] is False
    assert body["email_auth_enabled"] is False
