"""A real ``hubbub serve`` driven by the official ``zulip`` client from PyPI.

Each test runs on SQLite and (with HUBBUB_TEST_DATABASE_URL) on PostgreSQL. The client is
built the way users build it: from a zuliprc written by ``hubbub zuliprc`` or by ``serve``.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import zulip

from tests.e2e.client import assert_error, assert_ok, close, make_client
from tests.e2e.conftest import HubbubServer, OwnerCredentials, run_hubbub

OWNER_EMAIL = "admin@hubbub.local"
API_KEY_RE = re.compile(r"^[A-Za-z0-9]{32}$")


@pytest.fixture
def owner(hubbub_server: HubbubServer) -> OwnerCredentials:
    return hubbub_server.owner()


@pytest.fixture
def zuliprc_path(hubbub_server: HubbubServer, owner: OwnerCredentials, tmp_path: Path) -> Path:
    """The owner's zuliprc, written by ``hubbub zuliprc`` against the server's database."""
    path = tmp_path / "owner.zuliprc"
    result = run_hubbub(
        "zuliprc",
        "--realm",
        "",
        "--email",
        owner.email,
        "--output",
        str(path),
        *hubbub_server.db_args(),
        "--site",
        hubbub_server.url,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    return path


@pytest.fixture
def client(zuliprc_path: Path) -> Iterator[zulip.Client]:
    client = make_client(config_file=str(zuliprc_path))
    try:
        yield client
    finally:
        close(client)


# --- first start --------------------------------------------------------------------------


def test_serve_prints_owner_credentials_once(
    hubbub_server: HubbubServer, owner: OwnerCredentials
) -> None:
    out = hubbub_server.stdout()
    assert out.startswith("Created the organization and its owner"), out
    assert f"  URL:      {hubbub_server.url}\n" in out
    assert owner.email == OWNER_EMAIL
    assert len(owner.password) >= 12, owner
    assert API_KEY_RE.match(owner.api_key), owner
    # Credentials go to stdout only; the log (stderr) must not leak them.
    assert owner.password not in hubbub_server.stderr()
    assert owner.api_key not in hubbub_server.stderr()


def test_serve_writes_a_working_zuliprc(
    hubbub_server: HubbubServer, owner: OwnerCredentials
) -> None:
    path = hubbub_server.data_dir / "zuliprc"
    assert path.is_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == (
        f"[api]\nemail={owner.email}\nkey={owner.api_key}\nsite={hubbub_server.url}\n"
    )
    assert f"  zuliprc:  {path.resolve()}" in hubbub_server.stdout()

    client = make_client(config_file=str(path))
    try:
        profile = assert_ok(client.get_profile())
        assert profile["email"] == owner.email
        assert profile["delivery_email"] == owner.email
        assert profile["full_name"] == "Organization Owner"
        assert (profile["role"], profile["is_owner"], profile["is_admin"]) == (100, True, True)
        assert profile["is_bot"] is False
        assert profile["is_active"] is True
        assert profile["max_message_id"] == -1
        # The client reads the server's version when it is constructed.
        assert client.zulip_version == "10.2"
        assert client.feature_level == 372
    finally:
        close(client)


# --- reading users -------------------------------------------------------------------------


def test_profile_members_and_user_lookups(
    client: zulip.Client, owner: OwnerCredentials, zuliprc_path: Path, hubbub_server: HubbubServer
) -> None:
    assert zuliprc_path.read_text() == (
        f"[api]\nemail={owner.email}\nkey={owner.api_key}\nsite={hubbub_server.url}\n"
    )
    assert stat.S_IMODE(zuliprc_path.stat().st_mode) == 0o600

    profile = assert_ok(client.get_profile())
    owner_id = profile["user_id"]
    assert isinstance(owner_id, int)
    assert profile["email"] == OWNER_EMAIL
    assert profile["is_owner"] is True

    members = assert_ok(client.get_members())["members"]
    assert [(m["user_id"], m["email"], m["full_name"], m["role"]) for m in members] == [
        (owner_id, OWNER_EMAIL, "Organization Owner", 100)
    ]
    assert members[0]["is_active"] is True
    assert members[0]["is_bot"] is False

    by_email = assert_ok(client.call_endpoint(url=f"users/{OWNER_EMAIL}", method="GET"))
    assert by_email["user"]["user_id"] == owner_id
    assert by_email["user"]["full_name"] == "Organization Owner"
    assert by_email["user"]["delivery_email"] == OWNER_EMAIL

    by_id = assert_ok(client.get_user_by_id(owner_id))
    assert by_id["user"]["email"] == OWNER_EMAIL
    assert by_id["user"]["role"] == 100
    assert by_id["user"]["is_owner"] is True

    missing = client.get_user_by_id(owner_id + 1000)
    assert_error(missing, "BAD_REQUEST", "No such user")


def test_server_settings(client: zulip.Client, hubbub_server: HubbubServer) -> None:
    settings = assert_ok(client.get_server_settings())
    assert settings["zulip_feature_level"] == 372
    assert settings["zulip_version"] == "10.2"
    assert settings["realm_name"] == "Hubbub"
    assert settings["realm_uri"] == hubbub_server.url
    assert settings["authentication_methods"]["password"] is True
    assert settings["authentication_methods"]["github"] is False
    assert settings["email_auth_enabled"] is True
    assert settings["push_notifications_enabled"] is False


# --- managing users ------------------------------------------------------------------------


def test_create_update_deactivate_reactivate(
    client: zulip.Client, hubbub_server: HubbubServer
) -> None:
    created = assert_ok(
        client.create_user(
            {"email": "newbie@example.com", "password": "newbie-pw-1", "full_name": "New Bie"}
        )
    )
    user_id = created["user_id"]
    assert isinstance(user_id, int)

    members = {m["user_id"]: m for m in assert_ok(client.get_members())["members"]}
    assert len(members) == 2
    newbie = members[user_id]
    assert newbie["email"] == "newbie@example.com"
    assert newbie["delivery_email"] == "newbie@example.com"
    assert newbie["full_name"] == "New Bie"
    assert (newbie["role"], newbie["is_admin"], newbie["is_active"]) == (400, False, True)

    # The same address again is refused.
    duplicate = client.create_user(
        {"email": "newbie@example.com", "password": "newbie-pw-1", "full_name": "Other"}
    )
    assert_error(duplicate, "BAD_REQUEST", "Email 'newbie@example.com' already in use")

    # The new user logs in with the password and uses the key they get.
    fetched = assert_ok(
        client.call_endpoint(
            "fetch_api_key",
            method="POST",
            request={"username": "newbie@example.com", "password": "newbie-pw-1"},
        )
    )
    assert fetched["user_id"] == user_id
    assert fetched["email"] == "newbie@example.com"
    assert API_KEY_RE.match(fetched["api_key"])
    newbie_client = make_client(
        email="newbie@example.com", api_key=fetched["api_key"], site=hubbub_server.url
    )
    try:
        assert assert_ok(newbie_client.get_profile())["user_id"] == user_id

        assert_ok(client.update_user_by_id(user_id, full_name="Renamed Person", role=200))
        user = assert_ok(client.get_user_by_id(user_id))["user"]
        assert (user["full_name"], user["role"], user["is_admin"]) == ("Renamed Person", 200, True)
        assert assert_ok(newbie_client.get_profile())["full_name"] == "Renamed Person"

        assert_ok(client.deactivate_user_by_id(user_id))
        user = assert_ok(client.get_user_by_id(user_id))["user"]
        assert user["is_active"] is False
        members = {m["user_id"]: m for m in assert_ok(client.get_members())["members"]}
        assert members[user_id]["is_active"] is False
        assert_error(newbie_client.get_profile(), "USER_DEACTIVATED", "Account is deactivated")

        assert_ok(client.reactivate_user_by_id(user_id))
        user = assert_ok(client.get_user_by_id(user_id))["user"]
        assert user["is_active"] is True
        assert assert_ok(newbie_client.get_profile())["email"] == "newbie@example.com"
    finally:
        close(newbie_client)

    # The only owner cannot be deactivated.
    owner_id = assert_ok(client.get_profile())["user_id"]
    assert_error(
        client.deactivate_user_by_id(owner_id),
        "BAD_REQUEST",
        "Cannot deactivate the only organization owner",
    )


# --- logging in ----------------------------------------------------------------------------


def test_fetch_api_key_with_the_printed_password(
    client: zulip.Client, owner: OwnerCredentials
) -> None:
    result = assert_ok(
        client.call_endpoint(
            "fetch_api_key",
            method="POST",
            request={"username": owner.email, "password": owner.password},
        )
    )
    assert result["api_key"] == owner.api_key
    assert result["email"] == owner.email
    assert result["user_id"] == assert_ok(client.get_profile())["user_id"]

    wrong = client.call_endpoint(
        "fetch_api_key",
        method="POST",
        request={"username": owner.email, "password": owner.password + "x"},
    )
    assert_error(wrong, "AUTHENTICATION_FAILED", "Your username or password is incorrect")


def test_wrong_api_key_is_unauthorized(
    hubbub_server: HubbubServer, owner: OwnerCredentials
) -> None:
    wrong_key = "A" * 32 if owner.api_key != "A" * 32 else "B" * 32
    client = make_client(email=owner.email, api_key=wrong_key, site=hubbub_server.url)
    try:
        assert_error(client.get_profile(), "UNAUTHORIZED", "Invalid API key")
        assert_error(client.get_members(), "UNAUTHORIZED", "Invalid API key")
    finally:
        close(client)

    # What the client saw is a 401 carrying the Basic challenge, as Zulip sends.
    response = httpx.get(
        f"{hubbub_server.url}/api/v1/users/me", auth=(owner.email, wrong_key), timeout=10
    )
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Basic realm="zulip"'
