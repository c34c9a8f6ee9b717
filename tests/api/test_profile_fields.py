"""``/realm/profile_fields`` and ``/users/me/profile_data``: Zulip 10.2's behaviour and
error texts; a failed request changes nothing."""

from __future__ import annotations

from typing import Any

import orjson
import sqlalchemy as sa

from hubbub.actions.profile_fields import check_create_field
from hubbub.db.tables import custom_profile_field_value
from tests.helpers import TestEnv, assert_error, assert_success

FIELDS = "/realm/profile_fields"
PROFILE_DATA = "/users/me/profile_data"
CHOICES = {"vim": {"text": "Vim", "order": "1"}, "emacs": {"text": "Emacs", "order": "2"}}


async def _create(env: TestEnv, user: str = "iago", **params: Any) -> int:
    body = assert_success(await env.client(user).post(FIELDS, params))
    return int(body["id"])


async def _fields(env: TestEnv) -> list[dict[str, Any]]:
    body = assert_success(await env.client("hamlet").get(FIELDS))
    return list(body["custom_fields"])


async def _profile(env: TestEnv, user: str = "hamlet") -> dict[str, Any]:
    body = assert_success(
        await env.client("othello").get(
            f"/users/{env.users[user].id}", {"include_custom_profile_fields": True}
        )
    )
    return dict(body["user"]["profile_data"])


async def test_create_every_type_and_list_in_order(env: TestEnv) -> None:
    assert await _fields(env) == []
    phone = await _create(env, name=" Phone ", hint="Work phone", field_type=1)
    bio = await _create(env, name="Biography", field_type=2)
    editor = await _create(
        env, name="Editor", field_type=3, field_data=CHOICES, display_in_profile_summary=True
    )
    birthday = await _create(env, name="Birthday", field_type=4)
    site = await _create(env, name="Website", field_type=5, display_in_profile_summary=True)
    mentor = await _create(env, name="Mentor", field_type=6)
    github = await _create(env, field_type=7, field_data={"subtype": "github"})
    custom = {"subtype": "custom", "url_pattern": "https://example.com/u/%(username)s"}
    handle = await _create(env, name="Handle", field_type=7, field_data=custom)
    pronouns = await _create(env, name="Pronouns", field_type=8, field_data={"ignored": "x"})
    fields = await _fields(env)
    assert [f["id"] for f in fields] == [
        phone, bio, editor, birthday, site, mentor, github, handle, pronouns
    ]  # fmt: skip
    assert fields[0] == {
        "id": phone,
        "name": "Phone",  # stripped
        "type": 1,
        "hint": "Work phone",
        "field_data": "",
        "order": phone,
        "required": False,
        "editable_by_user": True,
    }
    assert fields[2]["display_in_profile_summary"] is True
    assert orjson.loads(fields[2]["field_data"]) == CHOICES
    assert "display_in_profile_summary" not in fields[1]
    # A default external account takes its label and hint from Zulip's catalogue.
    assert fields[6]["name"] == "GitHub username" and fields[6]["hint"] == ""
    assert orjson.loads(fields[6]["field_data"]) == {"subtype": "github"}
    assert orjson.loads(fields[7]["field_data"]) == custom
    # Only select and external account fields keep field_data.
    assert fields[8]["field_data"] == ""


async def test_create_needs_an_administrator(env: TestEnv) -> None:
    for user in ("shiva", "hamlet", "polonius"):
        assert_error(
            await env.client(user).post(FIELDS, {"name": "X", "field_type": 1}),
            "Must be an organization administrator",
            code="UNAUTHORIZED_PRINCIPAL",
        )
    await _create(env, user="desdemona", name="X", field_type=1)
    assert [f["name"] for f in await _fields(env)] == ["X"]


async def test_create_errors(env: TestEnv) -> None:
    admin = env.client("iago")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"name": "X", "field_type": "one"}, "field_type is not valid JSON"),
        ({"name": "X", "field_type": '"1"'}, "field_type is not an integer"),
        ({"name": "X", "field_type": 99}, "Invalid field type."),
        ({"name": "  ", "field_type": 1}, "Label cannot be blank."),
        ({"field_type": 1}, "Label cannot be blank."),
        ({"name": "X" * 41, "field_type": 1}, "name is too long (limit: 40 characters)"),
        (
            {"name": "X", "hint": "h" * 81, "field_type": 1},
            "hint is too long (limit: 80 characters)",
        ),
        ({"name": "X", "field_type": 1, "field_data": "[]"}, "field_data is not a dict"),
        (
            {"name": "X", "field_type": 1, "field_data": {"a": 1}},
            "field_data contains a value that is not an allowed_type",
        ),
        ({"name": "X", "field_type": 3}, "Field must have at least one choice."),
        (
            {"name": "X", "field_type": 3, "field_data": {" ": {"text": "A", "order": "1"}}},
            "'value' cannot be blank.",
        ),
        ({"name": "X", "field_type": 3, "field_data": {"a": "A"}}, "field_data is not a dict"),
        (
            {"name": "X", "field_type": 3, "field_data": {"a": {"order": "1"}}},
            "text key is missing from field_data",
        ),
        (
            {"name": "X", "field_type": 3, "field_data": {"a": {"text": " ", "order": "1"}}},
            'field_data["text"] cannot be blank.',
        ),
        (
            {"name": "X", "field_type": 3, "field_data": {"a": {"text": "A"}}},
            "order key is missing from field_data",
        ),
        (
            {
                "name": "X",
                "field_type": 3,
                "field_data": {"a": {"text": "A", "order": "1", "x": ""}},
            },
            "Unexpected arguments: x",
        ),
        (
            {
                "name": "X",
                "field_type": 3,
                "field_data": {"a": {"text": "A", "order": "1"}, "b": {"text": "A", "order": "2"}},
            },
            "Field must not have duplicate choices.",
        ),
        ({"name": "X", "field_type": 7}, "subtype key is missing from field_data"),
        (
            {"name": "X", "field_type": 7, "field_data": {"subtype": "myspace"}},
            "Invalid external account type",
        ),
        (
            {"name": "X", "field_type": 7, "field_data": {"subtype": "custom"}},
            "Custom external account must define URL pattern",
        ),
        (
            {
                "name": "X",
                "field_type": 7,
                "field_data": {"subtype": "custom", "url_pattern": "https://example.com/"},
            },
            "URL pattern must contain '%(username)s'.",
        ),
        (
            {
                "name": "X",
                "field_type": 7,
                "field_data": {"subtype": "custom", "url_pattern": "nonsense/%(username)s"},
            },
            'field_data["url_pattern"] is not a URL',
        ),
        (
            {"name": "X", "field_type": 2, "display_in_profile_summary": True},
            "Field type not supported for display in profile summary.",
        ),
        (
            {"name": "X", "field_type": 6, "display_in_profile_summary": True},
            "Field type not supported for display in profile summary.",
        ),
    ]
    for params, message in cases:
        assert_error(await admin.post(FIELDS, params), message)
    assert_error(
        await admin.post(FIELDS, {"name": "X"}),
        "Missing 'field_type' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    await _create(env, name="Phone", field_type=1)
    assert_error(
        await admin.post(FIELDS, {"name": "Phone", "field_type": 2}),
        "A field with that label already exists.",
    )
    await _create(env, field_type=7, field_data={"subtype": "twitter"})
    assert_error(
        await admin.post(FIELDS, {"field_type": 7, "field_data": {"subtype": "twitter"}}),
        "A field with that label already exists.",
    )
    assert [f["name"] for f in await _fields(env)] == ["Phone", "Twitter username"]


async def test_at_most_two_summary_fields(env: TestEnv) -> None:
    first = await _create(env, name="A", field_type=1, display_in_profile_summary=True)
    await _create(env, name="B", field_type=5, display_in_profile_summary=True)
    limit = "Only 2 custom profile fields can be displayed in the profile summary."
    assert_error(
        await env.client("iago").post(
            FIELDS, {"name": "C", "field_type": 1, "display_in_profile_summary": True}
        ),
        limit,
    )
    third = await _create(env, name="C", field_type=1)
    assert_error(
        await env.client("iago").patch(f"{FIELDS}/{third}", {"display_in_profile_summary": True}),
        limit,
    )
    # A field already in the summary does not count against itself.
    assert_success(
        await env.client("iago").patch(f"{FIELDS}/{first}", {"display_in_profile_summary": True})
    )
    assert_success(
        await env.client("iago").patch(f"{FIELDS}/{first}", {"display_in_profile_summary": False})
    )
    assert_success(
        await env.client("iago").patch(f"{FIELDS}/{third}", {"display_in_profile_summary": True})
    )
    summary = [f["name"] for f in await _fields(env) if f.get("display_in_profile_summary")]
    assert summary == ["B", "C"]


async def test_update_field(env: TestEnv) -> None:
    admin = env.client("iago")
    phone = await _create(env, name="Phone", field_type=1)
    editor = await _create(env, name="Editor", field_type=3, field_data=CHOICES)
    assert_success(await admin.patch(f"{FIELDS}/{phone}", {"name": " Mobile ", "hint": "Yours"}))
    # field_type is not a parameter of the update.
    body = assert_success(await admin.patch(f"{FIELDS}/{phone}", {"field_type": 2}))
    assert body["ignored_parameters_unsupported"] == ["field_type"]
    new_choices = {"vim": {"text": "Vim", "order": "2"}, "nano": {"text": "Nano", "order": "1"}}
    assert_success(await admin.patch(f"{FIELDS}/{editor}", {"field_data": new_choices}))
    fields = await _fields(env)
    assert fields[0] | {"name": "Mobile", "hint": "Yours", "type": 1} == fields[0]
    assert orjson.loads(fields[1]["field_data"]) == new_choices
    # field_data of a type that has none is ignored.
    assert_success(await admin.patch(f"{FIELDS}/{phone}", {"field_data": {"a": "b"}}))
    assert (await _fields(env))[0]["field_data"] == ""


async def test_update_errors_change_nothing(env: TestEnv) -> None:
    admin = env.client("iago")
    phone = await _create(env, name="Phone", field_type=1)
    editor = await _create(env, name="Editor", field_type=3, field_data=CHOICES)
    github = await _create(env, field_type=7, field_data={"subtype": "github"})
    before = await _fields(env)
    cases: list[tuple[int, dict[str, Any], str]] = [
        (9999, {"name": "X"}, "Field id 9999 not found."),
        (phone, {"name": " "}, "Label cannot be blank."),
        (phone, {"name": "Editor"}, "A field with that label already exists."),
        (phone, {"name": "X" * 41}, "name is too long (limit: 40 characters)"),
        (phone, {"hint": "h" * 81}, "hint is too long (limit: 80 characters)"),
        (editor, {"field_data": {}}, "Field must have at least one choice."),
        (editor, {"field_data": "x"}, "field_data is not valid JSON"),
        (github, {"name": "GitLab"}, "Default custom field cannot be updated."),
        (github, {"hint": "new"}, "Default custom field cannot be updated."),
        (github, {"field_data": {"subtype": "twitter"}}, "Default custom field cannot be updated."),
    ]
    for field_id, params, message in cases:
        assert_error(await admin.patch(f"{FIELDS}/{field_id}", params), message)
    assert_error(
        await env.client("hamlet").patch(f"{FIELDS}/{phone}", {"name": "X"}),
        "Must be an organization administrator",
        code="UNAUTHORIZED_PRINCIPAL",
    )
    assert await _fields(env) == before
    # A default external account may still go in or out of the summary, and the
    # request may repeat its current label.
    assert_success(
        await admin.patch(
            f"{FIELDS}/{github}",
            {"name": "GitHub username", "display_in_profile_summary": True},
        )
    )
    assert (await _fields(env))[2]["display_in_profile_summary"] is True


async def test_removed_choice_clears_values(env: TestEnv) -> None:
    editor = await _create(env, name="Editor", field_type=3, field_data=CHOICES)
    for user, choice in (("hamlet", "vim"), ("othello", "emacs")):
        assert_success(
            await env.client(user).patch(PROFILE_DATA, {"data": [{"id": editor, "value": choice}]})
        )
    assert_success(
        await env.client("iago").patch(
            f"{FIELDS}/{editor}", {"field_data": {"vim": CHOICES["vim"]}}
        )
    )
    assert await _profile(env, "hamlet") == {str(editor): {"value": "vim"}}
    assert await _profile(env, "othello") == {}


async def test_delete_field_removes_values(env: TestEnv) -> None:
    phone = await _create(env, name="Phone", field_type=1)
    bio = await _create(env, name="Bio", field_type=2)
    data = [{"id": phone, "value": "123"}, {"id": bio, "value": "Hi"}]
    assert_success(await env.client("hamlet").patch(PROFILE_DATA, {"data": data}))
    assert_error(
        await env.client("hamlet").delete(f"{FIELDS}/{phone}"),
        "Must be an organization administrator",
        code="UNAUTHORIZED_PRINCIPAL",
    )
    assert_error(await env.client("iago").delete(f"{FIELDS}/9999"), "Field id 9999 not found.")
    assert_success(await env.client("iago").delete(f"{FIELDS}/{phone}"))
    assert [f["id"] for f in await _fields(env)] == [bio]
    assert set(await _profile(env)) == {str(bio)}
    async with env.services.db.read() as conn:
        rows = await conn.execute(
            sa.select(custom_profile_field_value.c.field_id).where(
                custom_profile_field_value.c.field_id == phone
            )
        )
        assert rows.all() == []


async def test_other_realm_field_is_not_found(env: TestEnv) -> None:
    other = await env.create_realm("other", "Other")
    boss = await env.create_user("boss@other.example", "Boss", realm=other)
    async with env.services.write() as tx:
        field_id = await check_create_field(
            tx,
            other.id,
            name="Secret",
            hint="",
            field_type=1,
            field_data={},
            display_in_profile_summary=False,
        )
    assert boss.realm_id == other.id
    admin = env.client("iago")
    message = f"Field id {field_id} not found."
    assert_error(await admin.delete(f"{FIELDS}/{field_id}"), message)
    assert_error(await admin.patch(f"{FIELDS}/{field_id}", {"name": "X"}), message)
    assert_error(
        await env.client("hamlet").patch(PROFILE_DATA, {"data": [{"id": field_id, "value": "x"}]}),
        message,
    )
    assert await _fields(env) == []


async def test_reorder(env: TestEnv) -> None:
    admin = env.client("iago")
    a = await _create(env, name="A", field_type=1)
    b = await _create(env, name="B", field_type=1)
    c = await _create(env, name="C", field_type=1)
    assert_error(await admin.patch(FIELDS, {"order": [c, a]}), "Invalid order mapping.")
    assert_error(
        await admin.patch(FIELDS, {}), "Missing 'order' argument", code="REQUEST_VARIABLE_MISSING"
    )
    assert_error(await admin.patch(FIELDS, {"order": ["a"]}), "order[0] is not an integer")
    assert_error(
        await env.client("hamlet").patch(FIELDS, {"order": [c, b, a]}),
        "Must be an organization administrator",
        code="UNAUTHORIZED_PRINCIPAL",
    )
    assert [f["id"] for f in await _fields(env)] == [a, b, c]
    # Ids of no field are ignored, as in Zulip; the new order is the index in the list.
    assert_success(await admin.patch(FIELDS, {"order": [c, 9999, a, b]}))
    fields = await _fields(env)
    assert [(f["id"], f["order"]) for f in fields] == [(c, 0), (a, 2), (b, 3)]
    # A new field still goes last.
    d = await _create(env, name="D", field_type=1)
    assert [f["id"] for f in await _fields(env)][-1] == d


async def test_set_own_values_of_every_type(env: TestEnv) -> None:
    phone = await _create(env, name="Phone", field_type=1)
    bio = await _create(env, name="Bio", field_type=2)
    editor = await _create(env, name="Editor", field_type=3, field_data=CHOICES)
    birthday = await _create(env, name="Birthday", field_type=4)
    site = await _create(env, name="Site", field_type=5)
    mentor = await _create(env, name="Mentor", field_type=6)
    github = await _create(env, field_type=7, field_data={"subtype": "github"})
    pronouns = await _create(env, name="Pronouns", field_type=8)
    iago = env.users["iago"].id
    data = [
        {"id": phone, "value": "+1 <555>"},
        {"id": bio, "value": "Prince of\n\nDenmark"},
        {"id": editor, "value": "vim"},
        {"id": birthday, "value": "1600-01-31"},
        {"id": site, "value": "https://example.com/hamlet"},
        {"id": mentor, "value": [iago]},
        {"id": github, "value": "hamlet"},
        {"id": pronouns, "value": "he/him"},
    ]
    assert_success(await env.client("hamlet").patch(PROFILE_DATA, {"data": data}))
    assert await _profile(env) == {
        str(phone): {"value": "+1 <555>", "rendered_value": "<p>+1 &lt;555&gt;</p>"},
        str(bio): {
            "value": "Prince of\n\nDenmark",
            "rendered_value": "<p>Prince of</p>\n<p>Denmark</p>",
        },
        str(editor): {"value": "vim"},
        str(birthday): {"value": "1600-01-31"},
        str(site): {"value": "https://example.com/hamlet"},
        str(mentor): {"value": f"[{iago}]"},
        str(github): {"value": "hamlet"},
        str(pronouns): {"value": "he/him"},
    }
    # The legacy-looking name ``profile_data`` is accepted too.
    assert_success(
        await env.client("hamlet").patch(
            PROFILE_DATA, {"profile_data": [{"id": phone, "value": "42"}]}
        )
    )
    assert (await _profile(env))[str(phone)]["value"] == "42"
    # Guests fill in their own profile as well.
    assert_success(
        await env.client("polonius").patch(PROFILE_DATA, {"data": [{"id": phone, "value": "7"}]})
    )


async def test_set_own_values_errors_change_nothing(env: TestEnv) -> None:
    phone = await _create(env, name="Phone", field_type=1)
    bio = await _create(env, name="Bio", field_type=2)
    editor = await _create(env, name="Editor", field_type=3, field_data=CHOICES)
    birthday = await _create(env, name="Birthday", field_type=4)
    site = await _create(env, name="Site", field_type=5)
    mentor = await _create(env, name="Mentor", field_type=6)
    bot = await env.create_user("bot@example.com", "Bot", bot_owner=env.users["hamlet"])
    await env.create_user("gone@example.com", "Gone")
    gone = await env.create_user("gone2@example.com", "Gone 2")
    assert_success(await env.client("iago").delete(f"/users/{gone.id}"))
    cases: list[tuple[Any, str]] = [
        ({"id": phone}, "value key is missing from data[0]"),
        ({"value": "x"}, "id key is missing from data[0]"),
        ({"id": "1", "value": "x"}, 'data[0]["id"] is not an integer'),
        ({"id": phone, "value": 5}, 'data[0]["value"] is not an allowed_type'),
        ({"id": phone, "value": None}, 'data[0]["value"] is not an allowed_type'),
        ({"id": phone, "value": "x", "extra": 1}, "Unexpected arguments: extra"),
        ({"id": 9999, "value": "x"}, "Field id 9999 not found."),
        ({"id": phone, "value": "x" * 51}, "Phone is too long (limit: 50 characters)"),
        ({"id": phone, "value": [1]}, "Phone is not a string"),
        ({"id": bio, "value": "x" * 501}, "Bio is too long (limit: 500 characters)"),
        ({"id": editor, "value": "nano"}, "'nano' is not a valid choice for 'Editor'."),
        ({"id": birthday, "value": "1600-1-31"}, "Birthday is not a date"),
        ({"id": birthday, "value": "1600-02-30"}, "Birthday is not a date"),
        ({"id": site, "value": "not a url"}, "Site is not a URL"),
        ({"id": mentor, "value": "x"}, "User IDs is not a list"),
        ({"id": mentor, "value": [424242]}, "Invalid user ID: 424242"),
        ({"id": mentor, "value": [gone.id]}, f"User with ID {gone.id} is deactivated"),
        ({"id": mentor, "value": [bot.id]}, f"User with ID {bot.id} is a bot"),
    ]
    client = env.client("hamlet")
    for entry, message in cases:
        # The valid first entry is not written either.
        data = [{"id": phone, "value": "ok"}, entry]
        assert_error(
            await client.patch(PROFILE_DATA, {"data": data}), message.replace("[0]", "[1]")
        )
    assert_error(await client.patch(PROFILE_DATA, {"data": "x"}), "data is not valid JSON")
    assert_error(await client.patch(PROFILE_DATA, {"data": {}}), "data is not a list")
    assert_error(await client.patch(PROFILE_DATA, {"data": [1]}), "data[0] is not a dict")
    assert_error(
        await client.patch(PROFILE_DATA, {}),
        "Missing 'data' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert_error(
        await env.client(bot).patch(PROFILE_DATA, {"data": [{"id": phone, "value": "x"}]}),
        "This endpoint does not accept bot requests.",
    )
    assert await _profile(env) == {}


async def test_remove_own_values(env: TestEnv) -> None:
    phone = await _create(env, name="Phone", field_type=1)
    bio = await _create(env, name="Bio", field_type=2)
    client = env.client("hamlet")
    data = [{"id": phone, "value": "1"}, {"id": bio, "value": "Hi"}]
    assert_success(await client.patch(PROFILE_DATA, {"data": data}))
    assert_error(
        await client.delete(PROFILE_DATA, {"data": [phone, 9999]}), "Field id 9999 not found."
    )
    assert_error(await client.delete(PROFILE_DATA, {"data": ["x"]}), "data[0] is not an integer")
    assert set(await _profile(env)) == {str(phone), str(bio)}
    assert_success(await client.delete(PROFILE_DATA, {"data": [phone]}))
    assert set(await _profile(env)) == {str(bio)}
    # A field without a value is no error.
    assert_success(await client.delete(PROFILE_DATA, {"data": [phone, bio]}))
    assert await _profile(env) == {}


async def test_admin_sets_values_through_update_user(env: TestEnv) -> None:
    phone = await _create(env, name="Phone", field_type=1)
    hamlet = env.users["hamlet"].id
    admin = env.client("iago")
    assert_success(
        await admin.patch(f"/users/{hamlet}", {"profile_data": [{"id": phone, "value": "9"}]})
    )
    assert await _profile(env) == {str(phone): {"value": "9", "rendered_value": "<p>9</p>"}}
    assert_error(
        await admin.patch(f"/users/{hamlet}", {"profile_data": [{"id": phone, "value": 1}]}),
        'profile_data[0]["value"] is not an allowed_type',
    )
    # There, null (or an empty value) clears the field.
    assert_success(
        await admin.patch(f"/users/{hamlet}", {"profile_data": [{"id": phone, "value": None}]})
    )
    assert await _profile(env) == {}


NOT_EDITABLE = "You are not allowed to change this field. Contact an administrator to update it."


async def test_required_and_editable_by_user(env: TestEnv) -> None:
    """Feature levels 244 and 296: both flags are set at creation (default: optional and
    editable) and changed by an update, on any field, a default external account's too."""
    admin = env.client("iago")
    badge = await _create(env, name="Badge", field_type=1, required=True, editable_by_user=False)
    github = await _create(env, field_type=7, field_data={"subtype": "github"})
    fields = {f["id"]: f for f in await _fields(env)}
    assert (fields[badge]["required"], fields[badge]["editable_by_user"]) == (True, False)
    assert (fields[github]["required"], fields[github]["editable_by_user"]) == (False, True)
    assert_success(await admin.patch(f"{FIELDS}/{badge}", {"required": False}))
    assert_success(
        await admin.patch(f"{FIELDS}/{github}", {"required": True, "editable_by_user": False})
    )
    fields = {f["id"]: f for f in await _fields(env)}
    assert (fields[badge]["required"], fields[badge]["editable_by_user"]) == (False, False)
    assert (fields[github]["required"], fields[github]["editable_by_user"]) == (True, False)
    assert fields[github]["name"] == "GitHub username"
    assert_error(
        await admin.post(FIELDS, {"name": "X", "field_type": 1, "required": "yes"}),
        "required is not valid JSON",
    )
    assert_error(
        await admin.patch(f"{FIELDS}/{badge}", {"editable_by_user": 1}),
        "editable_by_user is not a boolean",
    )
    assert [f["name"] for f in await _fields(env)] == ["Badge", "GitHub username"]


async def test_only_admins_change_fields_users_may_not_edit(env: TestEnv) -> None:
    badge = await _create(env, name="Badge", field_type=1, editable_by_user=False)
    phone = await _create(env, name="Phone", field_type=1)
    hamlet = env.users["hamlet"]
    client = env.client("hamlet")
    # One entry for a locked field fails the whole request.
    data = [{"id": phone, "value": "1"}, {"id": badge, "value": "gold"}]
    assert_error(await client.patch(PROFILE_DATA, {"data": data}), NOT_EDITABLE)
    assert await _profile(env) == {}
    # An administrator sets it, for themselves or anyone.
    assert_success(
        await env.client("iago").patch(PROFILE_DATA, {"data": [{"id": badge, "value": "x"}]})
    )
    assert_success(
        await env.client("iago").patch(
            f"/users/{hamlet.id}", {"profile_data": [{"id": badge, "value": "gold"}]}
        )
    )
    assert await _profile(env) == {str(badge): {"value": "gold", "rendered_value": "<p>gold</p>"}}
    # The user can neither remove it nor clear it another way.
    assert_error(await client.delete(PROFILE_DATA, {"data": [phone, badge]}), NOT_EDITABLE)
    assert set(await _profile(env)) == {str(badge)}
    # A bot's owner edits the bot's editable fields only.
    bot = await env.create_user("badge-bot@example.com", "Badge bot", bot_owner=hamlet)
    assert_success(
        await client.patch(f"/users/{bot.id}", {"profile_data": [{"id": phone, "value": "2"}]})
    )
    for value in ("silver", None):
        assert_error(
            await client.patch(
                f"/users/{bot.id}", {"profile_data": [{"id": badge, "value": value}]}
            ),
            NOT_EDITABLE,
        )
    # Once editable again, the user may change it.
    assert_success(await env.client("iago").patch(f"{FIELDS}/{badge}", {"editable_by_user": True}))
    assert_success(await client.delete(PROFILE_DATA, {"data": [badge]}))
    assert await _profile(env) == {}
