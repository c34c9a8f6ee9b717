"""``PATCH /users/{email}`` (feature level 313): ``PATCH /users/{user_id}`` addressed by
email, the user found as ``GET /users/{email}`` finds them."""

from __future__ import annotations

from hubbub.models import Role
from tests.helpers import TestEnv, assert_error, assert_success


async def test_update_by_email(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    body = assert_success(
        await env.client("iago").patch(
            "/users/HAMLET@example.com",
            {"full_name": "Prince Hamlet", "role": Role.MODERATOR, "new_email": "h@example.com"},
        )
    )
    # Changing the address needs a permission hubbub does not grant (see api/users.py).
    assert body["ignored_parameters_unsupported"] == ["new_email"]
    fresh = await env.reload(hamlet)
    assert (fresh.full_name, fresh.role, fresh.delivery_email) == (
        "Prince Hamlet",
        Role.MODERATOR,
        "hamlet@example.com",
    )


async def test_profile_data_and_bots_by_email(env: TestEnv) -> None:
    field = assert_success(
        await env.client("iago").post("/realm/profile_fields", {"name": "Team", "field_type": 1})
    )["id"]
    hamlet = env.users["hamlet"]
    assert_success(
        await env.client("iago").patch(
            f"/users/{hamlet.delivery_email}", {"profile_data": [{"id": field, "value": "Blue"}]}
        )
    )
    body = assert_success(
        await env.client("othello").get(
            f"/users/{hamlet.id}", {"include_custom_profile_fields": True}
        )
    )
    assert body["user"]["profile_data"][str(field)]["value"] == "Blue"
    # A bot's owner may rename the bot, by its email too.
    bot = await env.create_user("mail-bot@example.com", "Mail bot", bot_owner=hamlet)
    assert_success(
        await env.client("hamlet").patch(f"/users/{bot.email}", {"full_name": "Post bot"})
    )
    assert (await env.reload(bot)).full_name == "Post bot"


async def test_errors_change_nothing(env: TestEnv) -> None:
    hamlet, owner = env.users["hamlet"], env.users["desdemona"]
    assert_error(
        await env.client("othello").patch(f"/users/{hamlet.email}", {"full_name": "Ham"}),
        "Insufficient permission",
    )
    assert_error(
        await env.client("iago").patch(f"/users/{owner.email}", {"role": Role.MEMBER}),
        "Must be an organization owner",
        code="UNAUTHORIZED_PRINCIPAL",
    )
    assert_error(
        await env.client("iago").patch("/users/nobody@example.com", {"full_name": "Ghost"}),
        "No such user",
    )
    assert_error(
        await env.client("iago").patch(f"/users/{hamlet.email}", {"role": 250}), "Invalid role"
    )
    other = await env.create_realm("zephyr", "Zephyr")
    stranger = await env.create_user("x@zephyr.example", "Stranger", realm=other)
    assert_error(
        await env.client("iago").patch(f"/users/{stranger.email}", {"full_name": "Mine"}),
        "No such user",
    )
    assert (await env.reload(hamlet)).full_name == "Hamlet"
    assert (await env.reload(owner)).role == Role.OWNER
    assert (await env.reload(stranger)).full_name == "Stranger"


async def test_a_real_email_the_admin_may_see_finds_the_user(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    # Visible to administrators only: the API email becomes a dummy address.
    assert_success(await env.client("hamlet").patch("/settings", {"email_address_visibility": 3}))
    assert (await env.reload(hamlet)).email != hamlet.delivery_email
    assert_success(
        await env.client("iago").patch(
            f"/users/{hamlet.delivery_email}", {"full_name": "Hamlet Dane"}
        )
    )
    assert (await env.reload(hamlet)).full_name == "Hamlet Dane"
