"""``GET /users/{email}`` by real email (feature level 302): an address the API shows finds
its user; a real address finds its user only where the caller's role may see it under
that user's email visibility, and is "No such user" otherwise, as an address nobody has."""

from __future__ import annotations

import sqlalchemy as sa

from hubbub.actions.users import do_deactivate_user
from hubbub.db.tables import user_profile
from hubbub.models import EmailVisibility, Role
from hubbub.queries.user_dicts import api_email
from tests.helpers import TestEnv, assert_error, assert_success

# The roles that find a user by real email, for each of the user's email visibility values.
FINDERS: dict[int, set[Role]] = {
    EmailVisibility.EVERYONE: set(Role),
    EmailVisibility.MEMBERS: set(Role) - {Role.GUEST},
    EmailVisibility.MODERATORS: {Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR},
    EmailVisibility.ADMINS: {Role.OWNER, Role.ADMINISTRATOR},
    EmailVisibility.NOBODY: set(),
}


async def _set_visibility(env: TestEnv, user: str, visibility: int) -> str:
    """Set the visibility as the settings would (the API email follows it); the API email."""
    target = env.users[user]
    shown = api_email(target.id, target.delivery_email, visibility)
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(user_profile)
            .where(user_profile.c.id == target.id)
            .values(email_address_visibility=visibility, email=shown)
        )
    return shown


async def _found(env: TestEnv, viewer: str, email: str) -> int | None:
    response = await env.client(viewer).get(f"/users/{email}")
    if response.status_code == 200:
        return int(assert_success(response)["user"]["user_id"])
    assert_error(response, "No such user")
    return None


async def test_real_email_follows_email_visibility(env: TestEnv) -> None:
    othello = env.users["othello"]
    # Othello, a member, is held to the members' rule for his own address, as in Zulip.
    viewers = ("desdemona", "iago", "shiva", "hamlet", "polonius", "othello")
    for visibility, finders in FINDERS.items():
        shown = await _set_visibility(env, "othello", visibility)
        for viewer in viewers:
            found = await _found(env, viewer, "Othello@Example.com")
            expected = othello.id if env.users[viewer].role in finders else None
            assert found == expected, (visibility, viewer)
            # The address the API shows always finds the user.
            assert await _found(env, viewer, shown) == othello.id, (visibility, viewer)


async def test_dummy_addresses_name_the_id(env: TestEnv) -> None:
    othello = env.users["othello"]
    await _set_visibility(env, "othello", EmailVisibility.ADMINS)
    body = assert_success(await env.client("hamlet").get(f"/users/USER{othello.id}@hubbub.invalid"))
    assert body["user"]["email"] == f"user{othello.id}@hubbub.invalid"
    assert body["user"]["delivery_email"] is None
    # A dummy address finds the user of its id even where the real address is shown.
    hamlet = env.users["hamlet"]
    body = assert_success(await env.client("othello").get(f"/users/user{hamlet.id}@hubbub.invalid"))
    assert body["user"]["email"] == "hamlet@example.com"
    other = await env.create_realm("zephyr", "Zephyr")
    stranger = await env.create_user("stranger@zephyr.example", "Stranger", realm=other)
    for missing in (
        f"user{stranger.id}@hubbub.invalid",
        "user999999@hubbub.invalid",
        "user99999999999999999999@hubbub.invalid",
        f"user{othello.id}@hubbub.invalid.example",
        "stranger@zephyr.example",
        "nobody@example.com",
    ):
        assert await _found(env, "iago", missing) is None, missing


async def test_deactivated_users_and_bots(env: TestEnv) -> None:
    bot = await env.create_user("helper-bot@example.com", "Helper", bot_owner=env.users["hamlet"])
    body = assert_success(await env.client("polonius").get("/users/Helper-Bot@example.com"))
    assert (body["user"]["user_id"], body["user"]["is_bot"]) == (bot.id, True)
    othello = env.users["othello"]
    await _set_visibility(env, "othello", EmailVisibility.MEMBERS)
    async with env.services.write() as tx:
        await do_deactivate_user(tx, othello)
    body = assert_success(await env.client("hamlet").get("/users/othello@example.com"))
    assert (body["user"]["user_id"], body["user"]["is_active"]) == (othello.id, False)
    assert await _found(env, "polonius", "othello@example.com") is None
