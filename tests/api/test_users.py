"""``/users`` endpoints: reads, creation, updates, (de)activation."""

from __future__ import annotations

import hashlib

import sqlalchemy as sa

from hubbub.db.tables import custom_profile_field, custom_profile_field_value, user_profile
from hubbub.models import EmailVisibility, Role
from tests.helpers import TestEnv, assert_error, assert_success

USER_KEYS = {
    "email",
    "user_id",
    "avatar_version",
    "is_admin",
    "is_owner",
    "is_guest",
    "is_billing_admin",
    "role",
    "is_bot",
    "full_name",
    "timezone",
    "is_active",
    "date_joined",
    "delivery_email",
    "avatar_url",
}


async def _add_profile_field(
    env: TestEnv, name: str, field_type: int, order: int, field_data: str = ""
) -> int:
    async with env.services.db.write() as conn:
        result = await conn.execute(
            sa.insert(custom_profile_field).values(
                realm_id=env.realm.id,
                name=name,
                field_type=field_type,
                order=order,
                field_data=field_data,
            )
        )
        return int(result.inserted_primary_key[0])  # type: ignore[index]


# GET /users


async def test_get_members_lists_every_user_with_zulip_fields(env: TestEnv) -> None:
    body = assert_success(await env.client("hamlet").get("/users"))
    members = {m["email"]: m for m in body["members"]}
    assert set(members) == {f"{n}@example.com" for n in env.users}
    iago = members["iago@example.com"]
    assert set(iago) == USER_KEYS
    assert iago["role"] == Role.ADMINISTRATOR and iago["is_admin"] and not iago["is_owner"]
    assert members["desdemona@example.com"]["is_owner"] is True
    assert members["desdemona@example.com"]["is_admin"] is True
    assert members["polonius@example.com"]["is_guest"] is True
    assert members["shiva@example.com"]["role"] == 300
    # client_gravatar defaults to true: Gravatar users get null, the client computes it.
    assert iago["avatar_url"] is None
    assert iago["date_joined"].endswith("+00:00")
    assert "profile_data" not in iago and "bot_type" not in iago


async def test_get_members_client_gravatar_false_gives_gravatar_url(env: TestEnv) -> None:
    body = assert_success(await env.client("hamlet").get("/users", {"client_gravatar": False}))
    digest = hashlib.md5(b"iago@example.com").hexdigest()
    iago = next(m for m in body["members"] if m["email"] == "iago@example.com")
    assert iago["avatar_url"] == (
        f"https://secure.gravatar.com/avatar/{digest}?d=identicon&version=1"
    )


async def test_get_members_includes_deactivated_users(env: TestEnv) -> None:
    assert_success(await env.client("iago").delete(f"/users/{env.users['othello'].id}"))
    body = assert_success(await env.client("hamlet").get("/users"))
    othello = next(m for m in body["members"] if m["full_name"] == "Othello")
    assert othello["is_active"] is False


async def test_custom_profile_fields_are_keyed_by_field_id(env: TestEnv) -> None:
    phone = await _add_profile_field(env, "Phone", 1, 1)
    birthday = await _add_profile_field(env, "Birthday", 4, 2)
    hamlet = env.users["hamlet"]
    assert_success(
        await env.client("iago").patch(
            f"/users/{hamlet.id}",
            {
                "profile_data": [
                    {"id": phone, "value": "+1 <555>"},
                    {"id": birthday, "value": "1600-01-01"},
                ],
            },
        )
    )
    body = assert_success(
        await env.client("othello").get(
            f"/users/{hamlet.id}", {"include_custom_profile_fields": True}
        )
    )
    assert body["user"]["profile_data"] == {
        str(phone): {"value": "+1 <555>", "rendered_value": "<p>+1 &lt;555&gt;</p>"},
        str(birthday): {"value": "1600-01-01"},
    }
    members = assert_success(
        await env.client("othello").get("/users", {"include_custom_profile_fields": True})
    )["members"]
    assert next(m for m in members if m["user_id"] == env.users["iago"].id)["profile_data"] == {}


# GET /users/{user_id} and /users/{email}


async def test_get_user_by_id(env: TestEnv) -> None:
    iago = env.users["iago"]
    body = assert_success(await env.client("hamlet").get(f"/users/{iago.id}"))
    assert body["user"]["user_id"] == iago.id
    assert body["user"]["full_name"] == "Iago"
    assert body["user"]["delivery_email"] == "iago@example.com"


async def test_get_user_by_id_errors(env: TestEnv) -> None:
    client = env.client("hamlet")
    assert_error(await client.get("/users/9999"), "No such user")
    other = await env.create_realm("zephyr", "Zephyr")
    stranger = await env.create_user("x@zephyr.example", "Stranger", realm=other)
    assert_error(await client.get(f"/users/{stranger.id}"), "No such user")


async def test_get_user_by_email(env: TestEnv) -> None:
    body = assert_success(await env.client("hamlet").get("/users/IAGO@example.com"))
    assert body["user"]["user_id"] == env.users["iago"].id
    assert_error(await env.client("hamlet").get("/users/nobody@example.com"), "No such user")


async def test_get_user_by_email_with_profile_data(env: TestEnv) -> None:
    field = await _add_profile_field(env, "Team", 2, 1)
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.insert(custom_profile_field_value).values(
                user_profile_id=env.users["iago"].id,
                field_id=field,
                value="Ops",
                rendered_value="<p>Ops</p>",
            )
        )
    body = assert_success(
        await env.client("hamlet").get(
            "/users/iago@example.com",
            {"include_custom_profile_fields": True, "client_gravatar": False},
        )
    )
    assert body["user"]["profile_data"] == {
        str(field): {"value": "Ops", "rendered_value": "<p>Ops</p>"}
    }
    assert body["user"]["avatar_url"].startswith("https://secure.gravatar.com/avatar/")


async def test_hidden_email_gives_dummy_address_and_null_delivery_email(env: TestEnv) -> None:
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(user_profile)
            .where(user_profile.c.id == env.users["othello"].id)
            .values(email_address_visibility=EmailVisibility.ADMINS)
        )
    othello_id = env.users["othello"].id
    as_member = assert_success(await env.client("hamlet").get(f"/users/{othello_id}"))["user"]
    assert as_member["delivery_email"] is None
    # The Gravatar can't be computed by a client that can't see the email.
    assert as_member["avatar_url"] is not None
    as_admin = assert_success(await env.client("iago").get(f"/users/{othello_id}"))["user"]
    assert as_admin["delivery_email"] == "othello@example.com"
    as_self = assert_success(await env.client("othello").get("/users/me"))
    assert as_self["delivery_email"] == "othello@example.com"


async def test_bots_carry_bot_type_and_owner(env: TestEnv) -> None:
    owner = env.users["hamlet"]
    bot = await env.create_user(
        "helper-bot@example.com", "Helper Bot", password=None, bot_owner=owner
    )
    body = assert_success(
        await env.client("iago").get(f"/users/{bot.id}", {"include_custom_profile_fields": True})
    )
    user = body["user"]
    assert user["is_bot"] is True and user["bot_type"] == 1
    assert user["bot_owner_id"] == owner.id
    assert "profile_data" not in user


# GET /users/me


async def test_get_own_user(env: TestEnv) -> None:
    body = assert_success(await env.client("hamlet").get("/users/me"))
    hamlet = env.users["hamlet"]
    assert body["user_id"] == hamlet.id
    assert body["email"] == "hamlet@example.com"
    assert body["role"] == Role.MEMBER
    assert body["profile_data"] == {}
    assert body["max_message_id"] == -1
    # /users/me always gives the full avatar URL.
    assert body["avatar_url"].startswith("https://secure.gravatar.com/avatar/")


# POST /users


async def test_create_user(env: TestEnv) -> None:
    body = assert_success(
        await env.client("iago").post(
            "/users",
            {"email": "newbie@example.com", "password": "long-enough", "full_name": "New Bie"},
        )
    )
    user = assert_success(await env.client("iago").get(f"/users/{body['user_id']}"))["user"]
    assert user["full_name"] == "New Bie" and user["role"] == Role.MEMBER
    # The new user can log in with that password.
    login = assert_success(
        await env.client().post(
            "/fetch_api_key", {"username": "newbie@example.com", "password": "long-enough"}
        )
    )
    assert login["user_id"] == body["user_id"]


async def test_create_user_errors_change_nothing(env: TestEnv) -> None:
    admin = env.client("iago")
    valid = {"email": "x@example.com", "password": "long-enough", "full_name": "Xavier"}
    assert_error(
        await env.client("hamlet").post("/users", valid),
        "Must be an organization administrator",
        code="UNAUTHORIZED_PRINCIPAL",
    )
    assert_error(
        await admin.post("/users", {**valid, "email": "HAMLET@example.com"}),
        "Email 'HAMLET@example.com' already in use",
    )
    assert_error(
        await admin.post("/users", {**valid, "email": "not-an-email"}), "Bad name or username"
    )
    assert_error(
        await admin.post("/users", {**valid, "password": "abc"}), "The password is too weak."
    )
    assert_error(await admin.post("/users", {**valid, "full_name": "X"}), "Name too short!")
    assert_error(await admin.post("/users", {**valid, "full_name": "x" * 101}), "Name too long!")
    assert_error(
        await admin.post("/users", {**valid, "full_name": "Bad*Name"}),
        "Invalid characters in name!",
    )
    assert_error(await admin.post("/users", {**valid, "full_name": "Name|15"}), "Invalid format!")
    body = assert_error(
        await admin.post("/users", {"email": "x@example.com", "password": "p"}),
        "Missing 'full_name' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert body["var_name"] == "full_name"
    members = assert_success(await admin.get("/users"))["members"]
    assert len(members) == len(env.users)


# PATCH /users/{user_id}


async def test_update_user_name_and_role(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    assert_success(
        await env.client("iago").patch(
            f"/users/{hamlet.id}", {"full_name": "Prince Hamlet", "role": Role.MODERATOR}
        )
    )
    fresh = await env.reload(hamlet)
    assert fresh.full_name == "Prince Hamlet" and fresh.role == Role.MODERATOR


async def test_update_user_ignores_empty_or_unchanged_name(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    assert_success(await env.client("iago").patch(f"/users/{hamlet.id}", {"full_name": "  "}))
    assert (await env.reload(hamlet)).full_name == "Hamlet"


async def test_update_user_permission_errors(env: TestEnv) -> None:
    hamlet, owner = env.users["hamlet"], env.users["desdemona"]
    assert_error(
        await env.client("othello").patch(f"/users/{hamlet.id}", {"full_name": "Ham"}),
        "Insufficient permission",
    )
    assert_error(
        await env.client("iago").patch(f"/users/{hamlet.id}", {"role": Role.OWNER}),
        "Must be an organization owner",
        code="UNAUTHORIZED_PRINCIPAL",
    )
    assert_error(
        await env.client("iago").patch(f"/users/{owner.id}", {"role": Role.MEMBER}),
        "Must be an organization owner",
        code="UNAUTHORIZED_PRINCIPAL",
    )
    assert_error(
        await env.client("desdemona").patch(f"/users/{owner.id}", {"role": Role.MEMBER}),
        "The owner permission cannot be removed from the only organization owner.",
    )
    assert_error(
        await env.client("iago").patch("/users/9999", {"full_name": "Ghost"}), "No such user"
    )
    assert (await env.reload(owner)).role == Role.OWNER
    assert (await env.reload(hamlet)).role == Role.MEMBER


async def test_update_user_validation_errors(env: TestEnv) -> None:
    hamlet_id = env.users["hamlet"].id
    admin = env.client("iago")
    assert_error(await admin.patch(f"/users/{hamlet_id}", {"role": 250}), "Invalid role")
    assert_error(
        await admin.patch(f"/users/{hamlet_id}", {"role": "admin"}), "role is not valid JSON"
    )
    assert_error(
        await admin.patch(f"/users/{hamlet_id}", {"role": "1.5"}), "role is not an integer"
    )
    assert_error(await admin.patch(f"/users/{hamlet_id}", {"full_name": "A"}), "Name too short!")
    assert_error(
        await admin.patch(f"/users/{hamlet_id}", {"profile_data": {"id": 1}}),
        "profile_data is not a list",
    )
    assert (await env.reload(env.users["hamlet"])).full_name == "Hamlet"


async def test_owner_can_promote_and_demote_owners(env: TestEnv) -> None:
    iago = env.users["iago"]
    owner = env.client("desdemona")
    assert_success(await owner.patch(f"/users/{iago.id}", {"role": Role.OWNER}))
    assert (await env.reload(iago)).role == Role.OWNER
    # With two owners, one may step down.
    assert_success(
        await owner.patch(f"/users/{env.users['desdemona'].id}", {"role": Role.ADMINISTRATOR})
    )
    assert (await env.reload(env.users["desdemona"])).role == Role.ADMINISTRATOR


async def test_profile_data_validation_is_all_or_nothing(env: TestEnv) -> None:
    text = await _add_profile_field(env, "Title", 1, 1)
    choice = await _add_profile_field(env, "Shift", 3, 2, '{"0": {"text": "Day", "order": "1"}}')
    people = await _add_profile_field(env, "Mentor", 6, 3)
    hamlet = env.users["hamlet"]
    admin = env.client("iago")
    assert_error(
        await admin.patch(
            f"/users/{hamlet.id}",
            {"profile_data": [{"id": text, "value": "Prince"}, {"id": choice, "value": "9"}]},
        ),
        "'9' is not a valid choice for 'Shift'.",
    )
    assert_error(
        await admin.patch(f"/users/{hamlet.id}", {"profile_data": [{"id": 9999, "value": "x"}]}),
        "Field id 9999 not found.",
    )
    assert_error(
        await admin.patch(
            f"/users/{hamlet.id}", {"profile_data": [{"id": people, "value": [424242]}]}
        ),
        "Invalid user ID: 424242",
    )
    assert_error(
        await admin.patch(
            f"/users/{hamlet.id}", {"profile_data": [{"id": text, "value": "x" * 51}]}
        ),
        "Title is too long (limit: 50 characters)",
    )
    body = assert_success(
        await admin.get(f"/users/{hamlet.id}", {"include_custom_profile_fields": True})
    )
    assert body["user"]["profile_data"] == {}
    assert_success(
        await admin.patch(
            f"/users/{hamlet.id}",
            {
                "profile_data": [
                    {"id": choice, "value": "0"},
                    {"id": people, "value": [env.users["iago"].id]},
                ]
            },
        )
    )
    body = assert_success(
        await admin.get(f"/users/{hamlet.id}", {"include_custom_profile_fields": True})
    )
    assert body["user"]["profile_data"] == {
        str(choice): {"value": "0"},
        str(people): {"value": f"[{env.users['iago'].id}]"},
    }
    # An empty value clears the field.
    assert_success(
        await admin.patch(f"/users/{hamlet.id}", {"profile_data": [{"id": choice, "value": ""}]})
    )
    body = assert_success(
        await admin.get(f"/users/{hamlet.id}", {"include_custom_profile_fields": True})
    )
    assert set(body["user"]["profile_data"]) == {str(people)}


async def test_bot_owner_may_rename_own_bot(env: TestEnv) -> None:
    bot = await env.create_user(
        "b-bot@example.com", "Old Bot", password=None, bot_owner=env.users["hamlet"]
    )
    assert_success(await env.client("hamlet").patch(f"/users/{bot.id}", {"full_name": "New Bot"}))
    assert (await env.reload(bot)).full_name == "New Bot"
    assert_error(
        await env.client("othello").patch(f"/users/{bot.id}", {"full_name": "Mine"}),
        "Insufficient permission",
    )
    assert_error(
        await env.client("hamlet").patch(f"/users/{bot.id}", {"role": Role.MODERATOR}),
        "Must be an organization administrator",
        code="UNAUTHORIZED_PRINCIPAL",
    )


# DELETE /users/{user_id}, POST /users/{user_id}/reactivate, DELETE /users/me


async def test_deactivate_and_reactivate_user(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    admin = env.client("iago")
    assert_success(
        await admin.delete(f"/users/{hamlet.id}", {"deactivation_notification_comment": "Bye"})
    )
    assert (await env.reload(hamlet)).is_active is False
    # A deactivated user can no longer use the API.
    response = await env.client("hamlet").get("/users/me")
    assert_error(response, "Account is deactivated", status=401, code="USER_DEACTIVATED")
    assert_error(await admin.delete(f"/users/{hamlet.id}"), "User is deactivated")
    assert_success(await admin.post(f"/users/{hamlet.id}/reactivate"))
    assert (await env.reload(hamlet)).is_active is True
    # Reactivating an active user succeeds and changes nothing, as in Zulip.
    assert_success(await admin.post(f"/users/{hamlet.id}/reactivate"))
    assert_success(await env.client("hamlet").get("/users/me"))


async def test_deactivating_a_human_deactivates_their_bots(env: TestEnv) -> None:
    bot = await env.create_user(
        "h-bot@example.com", "H Bot", password=None, bot_owner=env.users["hamlet"]
    )
    assert_success(await env.client("iago").delete(f"/users/{env.users['hamlet'].id}"))
    assert (await env.reload(bot)).is_active is False


async def test_deactivate_user_errors(env: TestEnv) -> None:
    owner = env.users["desdemona"]
    assert_error(
        await env.client("hamlet").delete(f"/users/{env.users['othello'].id}"),
        "Insufficient permission",
    )
    assert_error(
        await env.client("iago").delete(f"/users/{owner.id}"),
        "Must be an organization owner",
        code="UNAUTHORIZED_PRINCIPAL",
    )
    assert_error(
        await env.client("desdemona").delete(f"/users/{owner.id}"),
        "Cannot deactivate the only organization owner",
    )
    bot = await env.create_user("x-bot@example.com", "X Bot", password=None, bot_owner=owner)
    assert_error(await env.client("iago").delete(f"/users/{bot.id}"), "No such user")
    assert_error(
        await env.client("iago").delete(
            f"/users/{env.users['hamlet'].id}", {"deactivation_notification_comment": "x" * 2001}
        ),
        "deactivation_notification_comment is too long (limit: 2000 characters)",
    )
    assert_error(
        await env.client("hamlet").post(f"/users/{owner.id}/reactivate"), "Insufficient permission"
    )
    assert_error(await env.client("iago").post("/users/9999/reactivate"), "No such user")
    for name in ("desdemona", "hamlet", "othello"):
        assert (await env.reload(env.users[name])).is_active is True


async def test_deactivate_own_user(env: TestEnv) -> None:
    assert_success(await env.client("hamlet").delete("/users/me"))
    assert (await env.reload(env.users["hamlet"])).is_active is False


async def test_last_owner_cannot_leave(env: TestEnv) -> None:
    body = assert_error(
        await env.client("desdemona").delete("/users/me"),
        "Cannot deactivate the only organization owner.",
        code="CANNOT_DEACTIVATE_LAST_USER",
    )
    assert body["is_last_owner"] is True and body["entity"] == "organization owner"
    assert (await env.reload(env.users["desdemona"])).is_active is True


async def test_last_user_cannot_leave(env: TestEnv) -> None:
    realm = await env.create_realm("solo", "Solo")
    alone = await env.create_user("alone@solo.example", "Alone", realm=realm, role=Role.MEMBER)
    body = assert_error(
        await env.client(alone, host="solo.localhost").delete("/users/me"),
        "Cannot deactivate the only user.",
        code="CANNOT_DEACTIVATE_LAST_USER",
    )
    assert body["is_last_owner"] is False and body["entity"] == "user"
