"""``GET /server_settings`` and the generic HTTP behaviour: 404, 405, 500, parameters."""

from __future__ import annotations

import hashlib
import logging
from urllib.parse import parse_qsl

import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

from hubbub.api import users as users_api
from hubbub.api.endpoint import parse_fields
from hubbub.api.headers import header
from hubbub.db.tables import realm as realm_table
from hubbub.errors import JsonableError
from tests.helpers import TestEnv, assert_error, assert_success, basic_auth


async def test_server_settings(env: TestEnv) -> None:
    async with env.services.db.write() as conn:
        await conn.execute(sa.update(realm_table).values(description="Our **team** <chat>"))
    body = assert_success(await env.client(host="localhost:9991").get("/server_settings"))
    assert body["zulip_version"].startswith("10.2")
    assert body["zulip_feature_level"] == 372
    assert body["zulip_merge_base"] == "10.2"
    assert body["push_notifications_enabled"] is False
    assert body["realm_uri"] == "http://localhost:9991"
    assert body["realm_name"] == "Hubbub"
    assert body["realm_description"] == "<p>Our <strong>team</strong> &lt;chat&gt;</p>"
    assert body["realm_icon"] == (
        f"https://secure.gravatar.com/avatar/{hashlib.md5(b'').hexdigest()}?d=identicon"
    )
    assert body["authentication_methods"]["password"] is True
    assert body["authentication_methods"]["github"] is False
    assert body["email_auth_enabled"] is True
    assert body["require_email_format_usernames"] is True
    assert body["realm_web_public_access_enabled"] is False
    assert body["external_authentication_methods"] == []
    assert body["is_incompatible"] is False


async def test_server_settings_per_subdomain(env: TestEnv) -> None:
    await env.create_realm("eng", "Engineering")
    body = assert_success(await env.client(host="eng.localhost:9991").get("/server_settings"))
    assert body["realm_name"] == "Engineering"
    assert body["realm_uri"] == "http://eng.localhost:9991"
    # A subdomain with no organization: only the server-wide keys.
    body = assert_success(await env.client(host="nope.localhost").get("/server_settings"))
    assert "realm_name" not in body and "realm_uri" not in body
    assert body["zulip_feature_level"] == 372


async def test_unknown_route_is_json_404(env: TestEnv) -> None:
    response = await env.client("hamlet").get("/no/such/endpoint")
    assert response.status_code == 404
    assert response.json() == {"result": "error", "msg": "Not Found"}


async def test_wrong_method_is_json_405(env: TestEnv) -> None:
    response = await env.client("hamlet").request("PUT", "/users/me")
    assert response.status_code == 405
    assert response.json() == {
        "result": "error",
        "msg": "Method Not Allowed",
        "allowed_methods": ["DELETE", "GET", "HEAD"],
    }
    assert response.headers["Allow"] == "DELETE, GET, HEAD"


async def test_bug_is_json_500_and_logged(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(users_api, "get_user_dicts", broken)
    with caplog.at_level(logging.ERROR, logger="hubbub.api"):
        response = await env.client("hamlet").get("/users")
    assert response.status_code == 500
    assert response.json() == {"result": "error", "msg": "Internal server error"}
    assert "RuntimeError: boom" in caplog.text


async def test_ignored_parameters_are_reported_sorted(env: TestEnv) -> None:
    body = assert_success(
        await env.client("hamlet").get(
            "/users", {"zeta": 1, "alpha": "x", "client_gravatar": False}
        )
    )
    assert body["ignored_parameters_unsupported"] == ["alpha", "zeta"]
    body = assert_success(await env.client("hamlet").get("/users", {"client": "MyApp"}))
    assert "ignored_parameters_unsupported" not in body


async def test_form_body_wins_over_query_string(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    client = env.client("iago")
    response = await client.request(
        "PATCH", f"/users/{hamlet.id}?full_name=From+Query", {"full_name": "From Body"}
    )
    assert_success(response)
    assert (await env.reload(hamlet)).full_name == "From Body"
    # Any method takes its parameters from the query string too.
    assert_success(await client.request("PATCH", f"/users/{hamlet.id}?full_name=Only+Query"))
    assert (await env.reload(hamlet)).full_name == "Only Query"


async def test_boolean_parameters_need_json(env: TestEnv) -> None:
    client = env.client("hamlet")
    assert_error(
        await client.get("/users", {"client_gravatar": "yes"}), "client_gravatar is not valid JSON"
    )
    assert_error(
        await client.get("/users", {"client_gravatar": "1"}), "client_gravatar is not a boolean"
    )


async def test_api_paths_are_routed_by_hubbub_not_starlette(env: TestEnv) -> None:
    """``api/direct.py`` finds the endpoint itself: literal paths, templates with their
    parameters converted (an id that is not a number is no route, a JSON 404), HEAD where
    GET is served, 405 with the path's methods, and a proxy's ``root_path``."""
    hamlet = env.users["hamlet"]
    client = env.client("hamlet")
    assert assert_success(await client.get(f"/users/{hamlet.id}"))["user"]["user_id"] == hamlet.id
    assert assert_success(await client.get(f"/users/{hamlet.email}"))["user"]["user_id"] == (
        hamlet.id
    )
    response = await client.request("HEAD", "/users/me")
    assert response.status_code == 200 and response.content == b""
    response = await client.post("/messages/nope/reactions", {"emoji_name": "smile"})
    assert response.status_code == 404
    assert response.json() == {"result": "error", "msg": "Not Found"}
    response = await client.request("PUT", "/messages/1/reactions")
    assert response.status_code == 405
    assert response.json()["allowed_methods"] == ["DELETE", "POST"]
    # A trailing slash is another path, as in Zulip (no redirect).
    assert (await client.get("/users/me/")).status_code == 404
    # Behind a proxy that mounts the server under a prefix (uvicorn --root-path), the
    # prefix is not part of the route.
    import httpx

    transport = httpx.ASGITransport(app=env.app, root_path="/chat")
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        response = await http.get(
            "/chat/api/v1/users/me",
            headers={"Authorization": basic_auth(hamlet.delivery_email, hamlet.api_key)},
        )
    assert assert_success(response)["user_id"] == hamlet.id


async def test_form_bodies_are_utf8_and_bounded(env: TestEnv) -> None:
    """A url-encoded body is UTF-8, escaped or not (as Django reads it; ``curl -d``
    sends the bytes as they are), and more than 1,000 fields are refused, changing
    nothing."""
    hamlet = env.users["hamlet"]
    client = env.client("iago", headers={"Content-Type": "application/x-www-form-urlencoded"})
    response = await client.request(
        "PATCH", f"/users/{hamlet.id}", content="full_name=Zo%C3%AB+Ren%C3%A9e"
    )
    assert_success(response)
    assert (await env.reload(hamlet)).full_name == "Zoë Renée"
    response = await client.request(
        "PATCH", f"/users/{hamlet.id}", content="full_name=Jos\u00e9 Ng".encode()
    )
    assert_success(response)
    assert (await env.reload(hamlet)).full_name == "José Ng"
    many = "&".join(f"f{i}=x" for i in range(1001))
    response = await client.request(
        "PATCH", f"/users/{hamlet.id}", content=f"full_name=Changed&{many}"
    )
    assert_error(response, "Malformed request body")
    assert (await env.reload(hamlet)).full_name == "José Ng"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(alphabet="ab+%=2Cé;\x00 ", max_size=6),
            st.sampled_from(["", "=", "=%", "=%zz", "=%C3%A9", "=%ff", "=a+b", "=%2B"]),
            st.text(alphabet="xy+%=3Aé&", max_size=6),
        ),
        max_size=6,
    )
)
def test_fields_are_read_as_the_standard_library_reads_them(
    parts: list[tuple[str, str, str]],
) -> None:
    """``parse_fields`` gives what ``parse_qsl(keep_blank_values=True)`` gives (first value
    of a name winning), on strings made of the characters that matter to either."""
    text = "&".join(a + b + c for a, b, c in parts)
    expected: dict[str, str] = {}
    for name, value in parse_qsl(text, keep_blank_values=True):
        expected.setdefault(name, value)
    got: dict[str, str] = {}
    parse_fields(text, got)
    assert got == expected


def test_fields_keep_names_already_read_and_are_bounded() -> None:
    args = {"queue_id": "from the body"}
    parse_fields("queue_id=1700000000%3A5&last_event_id=7&&dont_block=false", args)
    assert args == {"queue_id": "from the body", "last_event_id": "7", "dont_block": "false"}
    parse_fields("&".join(["a=1"] * 1000), {}, max_fields=1000)
    with pytest.raises(JsonableError, match="Malformed request body"):
        parse_fields("&".join(["a=1"] * 1001), {}, max_fields=1000)


def test_a_header_is_its_first_value_read_from_the_scope() -> None:
    scope = {"headers": [(b"host", b"a.example"), (b"x-two", b"1"), (b"x-two", b"2")]}
    assert header(scope, b"host") == "a.example"
    assert header(scope, b"x-two") == "1"
    assert header(scope, b"authorization") is None
