"""The server answers only to the names it serves (``api/urls.served_host``): any other
Host header gets the answer for an organization that does not exist, on the API and on
the file routes alike."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import httpx
import pytest

from hubbub.api.urls import served_host
from hubbub.settings import Settings
from tests.helpers import TestEnv, assert_error, assert_success, running_env

SERVED_WITHOUT_EXTERNAL_HOST = [
    "localhost",
    "localhost:9991",
    "LOCALHOST:9991",
    "eng.localhost:9991",
    "127.0.0.1:9991",
    "[::1]:9991",
    "10.1.2.3:9991",  # an address cannot be rebound to another site
    "[2001:db8::1]",
    "testserver",  # one label: no public DNS name
    "",
]
REFUSED_WITHOUT_EXTERNAL_HOST = [
    "evil.example",
    "evil.example:9991",
    "localhost.evil.example",
    "eng.localhost.evil.example",
    "localhost:99x",
    "localhost@evil.example",
    "[::1]evil",
    "-bad-.localhost",
]
SERVED_WITH_EXTERNAL_HOST = [
    "chat.example.com",
    "CHAT.example.com:443",
    "eng.chat.example.com",
    "a.b.chat.example.com",
    "localhost:9991",
    "127.0.0.1",
    "[::1]:9991",
]
REFUSED_WITH_EXTERNAL_HOST = [
    "evil.example",
    "chat.example.com.evil.example",
    "evilchat.example.com",
    "10.1.2.3",
    "eng.localhost",
    "testserver",
    "",
    "x_y.chat.example.com",
]


@pytest.mark.parametrize("host", SERVED_WITHOUT_EXTERNAL_HOST)
def test_served_without_external_host(host: str) -> None:
    assert served_host(host, Settings())


@pytest.mark.parametrize("host", REFUSED_WITHOUT_EXTERNAL_HOST)
def test_refused_without_external_host(host: str) -> None:
    assert not served_host(host, Settings())


@pytest.mark.parametrize("host", SERVED_WITH_EXTERNAL_HOST)
def test_served_with_external_host(host: str) -> None:
    assert served_host(host, Settings(external_host="chat.example.com"))


@pytest.mark.parametrize("host", REFUSED_WITH_EXTERNAL_HOST)
def test_refused_with_external_host(host: str) -> None:
    assert not served_host(host, Settings(external_host="chat.example.com"))


def test_the_listen_address_is_served() -> None:
    on_lan = Settings(host="chat.lan", external_host="chat.example.com")
    assert served_host("chat.lan:9991", on_lan)
    assert not served_host("chat.lan:9991", Settings(external_host="chat.example.com"))


async def _get(env: TestEnv, path: str, host: str) -> httpx.Response:
    user = env.users["hamlet"]
    transport = httpx.ASGITransport(app=env.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        return await http.get(path, headers={"Host": host}, auth=(user.email, user.api_key))


FILE_PATHS = [
    "/user_uploads/1/ab/file.txt",
    "/user_uploads/thumbnail/1/ab/file.png/840x560.webp",
    "/avatar/1",
    "/user_avatars/1/emoji/images/1.png",
]


def _refused(response: httpx.Response) -> None:
    assert_error(response, "Invalid subdomain", status=404, code="NONEXISTENT_SUBDOMAIN")


@pytest.fixture
async def external_env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings.with_(external_host="chat.example.com")) as test_env:
        yield test_env


async def test_other_names_get_the_unknown_organization_answer(
    external_env: TestEnv, caplog: pytest.LogCaptureFixture
) -> None:
    env = external_env
    assert_success(await env.client(host="chat.example.com").get("/server_settings"))
    assert_success(await env.client("hamlet", host="chat.example.com").get("/users/me"))
    for host in ("evil.example", "chat.example.com.evil.example"):
        _refused(await env.client(host=host).get("/server_settings"))
        _refused(await env.client("hamlet", host=host).get("/users/me"))
        _refused(await env.client(host=host).post("/fetch_api_key", {"username": "x"}))
        for path in FILE_PATHS:
            _refused(await _get(env, path, host))
    # One line for each refused name, with its characters escaped.
    _refused(await env.client(host="evil\x1b[31m.example").get("/server_settings"))
    lines = [r.getMessage() for r in caplog.records if "refused a request" in r.getMessage()]
    assert len(lines) == 3
    assert "\x1b" not in lines[-1]


async def test_an_unknown_subdomain_of_the_external_host_names_no_organization(
    external_env: TestEnv,
) -> None:
    env = external_env
    client = env.client(host="nowhere.chat.example.com")
    # As in Zulip, the server's settings without any organization's.
    assert "realm_url" not in assert_success(await client.get("/server_settings"))
    _refused(await client.post("/fetch_api_key", {"username": "x", "password": "y"}))
    response = await env.client("hamlet", host="nowhere.chat.example.com").get("/users/me")
    assert_error(response, "Account is not associated with this subdomain")
    for path in FILE_PATHS[:3]:
        answer = await _get(env, path, "nowhere.chat.example.com")
        assert answer.status_code in (400, 401, 404), answer.text
        assert answer.json()["result"] == "error"


async def test_without_external_host_dotted_names_are_refused(
    env: TestEnv, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    for host in ("localhost:9991", "testserver", "127.0.0.1:9991", "10.1.2.3"):
        assert_success(await env.client("hamlet", host=host).get("/users/me"))
    _refused(await env.client("hamlet", host="evil.example").get("/users/me"))
    _refused(await _get(env, "/avatar/1", "evil.example"))
