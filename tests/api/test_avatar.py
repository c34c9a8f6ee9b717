"""``GET /avatar/{email_or_id}`` (and ``/medium``): a redirect to the user's avatar, for
callers with credentials (``api/avatar.py``), as the ``!avatar(...)`` syntax links it."""

from __future__ import annotations

import hashlib

import httpx
import sqlalchemy as sa

from hubbub.actions.users import do_deactivate_user
from hubbub.db.tables import realm as realm_table
from hubbub.markdown import MentionableUser, RenderContext, render_markdown
from hubbub.models import User
from tests.helpers import TestEnv, assert_error, assert_success, basic_auth


def gravatar(email: str, version: int = 1, extra: str = "") -> str:
    digest = hashlib.md5(email.lower().encode()).hexdigest()
    return f"https://secure.gravatar.com/avatar/{digest}?d=identicon{extra}&version={version}"


async def get(
    env: TestEnv,
    path: str,
    user: str | User | None = "hamlet",
    *,
    host: str = "localhost",
    method: str = "GET",
) -> httpx.Response:
    headers = {"Host": host}
    if user is not None:
        u = env.users[user] if isinstance(user, str) else user
        headers["Authorization"] = basic_auth(u.delivery_email, u.api_key)
    transport = httpx.ASGITransport(app=env.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        return await http.request(method, path, headers=headers)


def location(response: httpx.Response) -> str:
    assert response.status_code == 302, response.text
    return response.headers["location"]


async def test_by_id_and_by_email(env: TestEnv) -> None:
    othello = env.users["othello"]
    expected = gravatar("othello@example.com")
    for key in (str(othello.id), "othello@example.com", "OTHELLO@example.com"):
        assert location(await get(env, f"/avatar/{key}")) == expected
    # The Markdown's size is passed on, and the medium size asked for.
    assert location(await get(env, f"/avatar/{othello.id}?s=30")) == expected + "&s=30"
    medium = gravatar("othello@example.com", extra="&s=500")
    assert location(await get(env, f"/avatar/{othello.id}/medium")) == medium
    assert location(await get(env, f"/avatar/{othello.id}", method="HEAD")) == expected


async def test_unknown_users_get_the_addresses_gravatar(env: TestEnv) -> None:
    assert location(await get(env, "/avatar/Nobody@Example.org?s=30")) == (
        gravatar("nobody@example.org") + "&s=30"
    )
    # An id of nobody here, or of another organization's user, is no user of this one.
    other = await env.create_realm("other", "Other")
    stranger = await env.create_user("stranger@example.com", "Stranger", realm=other)
    assert location(await get(env, f"/avatar/{stranger.id}")) == gravatar(str(stranger.id))
    assert location(await get(env, "/avatar/stranger@example.com")) == (
        gravatar("stranger@example.com")
    )


async def test_bots_and_deactivated_users(env: TestEnv) -> None:
    bot = await env.create_user("helper-bot@example.com", "Helper", bot_owner=env.users["hamlet"])
    assert location(await get(env, f"/avatar/{bot.id}")) == gravatar("helper-bot@example.com")
    async with env.services.write() as tx:
        await do_deactivate_user(tx, env.users["othello"])
    othello = env.users["othello"].id
    assert location(await get(env, f"/avatar/{othello}")) == gravatar("othello@example.com")


async def test_the_api_key_is_not_passed_on(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    response = await get(env, f"/avatar/{hamlet.id}?s=30&api_key={hamlet.api_key}", user=None)
    assert location(response) == gravatar("hamlet@example.com") + "&s=30"
    assert hamlet.api_key not in response.headers["location"]
    response = await get(env, f"/avatar/{hamlet.id}?api_key={'x' * 32}", user=None)
    assert_error(response, "Invalid API key", status=401, code="UNAUTHORIZED")


async def test_credentials_are_needed(env: TestEnv) -> None:
    hamlet = env.users["hamlet"].id
    response = await get(env, f"/avatar/{hamlet}", user=None)
    assert_error(
        response,
        "Not logged in: API authentication or user session required",
        status=401,
        code="UNAUTHORIZED",
    )
    assert response.headers["www-authenticate"] == 'Basic realm="zulip"'
    # Spectators of an organization open to them, by id only.
    async with env.services.db.write() as conn:
        await conn.execute(sa.update(realm_table).values(enable_spectator_access=True))
    assert location(await get(env, f"/avatar/{hamlet}", user=None)) == (
        gravatar("hamlet@example.com")
    )
    response = await get(env, "/avatar/hamlet@example.com", user=None)
    assert_error(
        response,
        "Not logged in: API authentication or user session required",
        status=401,
        code="UNAUTHORIZED",
    )
    # Bad credentials are refused, spectators or not.
    wrong = basic_auth("hamlet@example.com", "y" * 32)
    transport = httpx.ASGITransport(app=env.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        response = await http.get(
            f"/avatar/{hamlet}", headers={"Host": "localhost", "Authorization": wrong}
        )
    assert response.status_code == 401


async def test_the_rendered_link_is_served(env: TestEnv) -> None:
    """The URL ``!avatar(...)`` renders redirects to that user's avatar."""
    hamlet = env.users["hamlet"]
    ctx = RenderContext(users=[MentionableUser(hamlet.id, hamlet.full_name, hamlet.email)])
    for source in ("!avatar(hamlet@example.com)", "!gravatar(nobody@example.org)"):
        html = render_markdown(source, ctx).html
        src = html.split('src="', 1)[1].split('"', 1)[0]
        assert location(await get(env, src)).endswith("&s=30")


async def test_a_sent_message_names_the_user_by_id(env: TestEnv) -> None:
    """A sent message's render context loads the users its avatar syntax names, so the
    URL carries their id, as Zulip's does; an unknown address keeps the address."""
    hamlet = env.users["hamlet"]
    content = f"!avatar({hamlet.email.upper()}) and !gravatar(nobody@example.org)"
    body = assert_success(await env.client("iago").post("/messages/render", {"content": content}))
    assert f'src="/avatar/{hamlet.id}?s=30"' in body["rendered"]
    assert 'src="/avatar/nobody@example.org?s=30"' in body["rendered"]
