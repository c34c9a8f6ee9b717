"""``POST /users/me/subscriptions/properties`` and ``PATCH /streams/{stream_id}``: every
setting, every error, and that a failed request changes nothing."""

from __future__ import annotations

import dataclasses
from typing import Any

import sqlalchemy as sa

from hubbub.db.tables import user_group
from hubbub.models import Stream, Subscription
from hubbub.queries.stream_permissions import stream_setting_values
from hubbub.queries.streams import get_default_stream_ids, get_stream_by_id, get_subscription
from hubbub.settings import Settings
from tests.group_settings_helpers import set_group_setting, system_group_id
from tests.helpers import TestEnv, assert_error, assert_success, running_env

PROPERTIES = "/users/me/subscriptions/properties"


async def _stream(env: TestEnv, stream_id: int) -> Stream:
    async with env.services.db.read() as conn:
        found = await get_stream_by_id(conn, env.realm.id, stream_id)
    assert found is not None
    return found


async def _sub(env: TestEnv, name: str, stream_id: int) -> Subscription:
    async with env.services.db.read() as conn:
        sub = await get_subscription(conn, env.users[name].id, stream_id)
    assert sub is not None
    return sub


async def _default_ids(env: TestEnv) -> list[int]:
    async with env.services.db.read() as conn:
        return await get_default_stream_ids(conn, env.realm.id)


def _change(stream_id: object, prop: object, value: Any) -> dict[str, Any]:
    return {"stream_id": stream_id, "property": prop, "value": value}


# --- POST /users/me/subscriptions/properties ----------------------------------------------


async def test_set_every_subscription_property(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    changes = [
        _change(denmark.id, "color", "#aabbcc"),
        _change(denmark.id, "is_muted", True),
        _change(denmark.id, "pin_to_top", True),
        _change(denmark.id, "desktop_notifications", True),
        _change(denmark.id, "audible_notifications", False),
        _change(denmark.id, "push_notifications", True),
        _change(denmark.id, "email_notifications", False),
        _change(denmark.id, "wildcard_mentions_notify", True),
    ]
    body = assert_success(
        await env.client("hamlet").post(PROPERTIES, {"subscription_data": changes})
    )
    # Only the envelope since feature level 111.
    assert body == {"result": "success", "msg": ""}
    sub = await _sub(env, "hamlet", denmark.id)
    assert sub.color == "#aabbcc" and sub.is_muted and sub.pin_to_top
    assert sub.desktop_notifications is True and sub.audible_notifications is False
    assert sub.push_notifications is True and sub.email_notifications is False
    assert sub.wildcard_mentions_notify is True
    listed = assert_success(await env.client("hamlet").get("/users/me/subscriptions"))
    [entry] = listed["subscriptions"]
    assert entry["is_muted"] is True and entry["in_home_view"] is False


async def test_in_home_view_is_the_inverse_of_is_muted(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    hamlet = env.client("hamlet")
    data = [_change(denmark.id, "in_home_view", False)]
    assert_success(await hamlet.post(PROPERTIES, {"subscription_data": data}))
    assert (await _sub(env, "hamlet", denmark.id)).is_muted is True
    data = [_change(denmark.id, "in_home_view", True)]
    assert_success(await hamlet.post(PROPERTIES, {"subscription_data": data}))
    assert (await _sub(env, "hamlet", denmark.id)).is_muted is False


async def test_short_colors_are_accepted(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    data = [_change(denmark.id, "color", "#F0a")]
    assert_success(await env.client("hamlet").post(PROPERTIES, {"subscription_data": data}))
    assert (await _sub(env, "hamlet", denmark.id)).color == "#F0a"


async def test_subscription_property_errors(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    elsinore_id = (await env.subscribe("othello", "Elsinore")).id
    secret = await env.subscribe("othello", "Secret", invite_only=True)
    hamlet = env.client("hamlet")
    first = "subscription_data[0]"
    cases: list[tuple[Any, str]] = [
        ([_change(denmark.id, "fluffiness", True)], "Unknown subscription property: fluffiness"),
        ([_change(denmark.id, "pin_to_top", "yes")], "pin_to_top is not a boolean"),
        ([_change(denmark.id, "in_home_view", "no")], "in_home_view is not a boolean"),
        ([_change(denmark.id, "color", True)], "color is not a string"),
        ([_change(denmark.id, "color", "red")], "color is not a valid hex color code"),
        ([_change(denmark.id, "color", "#abcdefa")], "color is not a valid hex color code"),
        ([_change(elsinore_id, "is_muted", True)], f"Not subscribed to stream id {elsinore_id}"),
        ([_change(secret.id, "is_muted", True)], "Invalid stream ID"),
        ([_change(99999, "is_muted", True)], "Invalid stream ID"),
        (["oops"], "subscription_data[0] is not a dict"),
        ([{"stream_id": denmark.id, "value": True}], f"property key is missing from {first}"),
        ([_change(denmark.id, "is_muted", 1)], f'{first}["value"] is not an allowed_type'),
        ([_change(True, "is_muted", True)], f'{first}["stream_id"] is not an integer'),
        ([_change(denmark.id, 7, True)], f'{first}["property"] is not a string'),
        ({"stream_id": denmark.id}, "subscription_data is not a list"),
    ]
    for data, message in cases:
        assert_error(await hamlet.post(PROPERTIES, {"subscription_data": data}), message)
    assert_error(
        await hamlet.post(PROPERTIES, {}),
        "Missing 'subscription_data' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    # Nothing changed along the way.
    sub = await _sub(env, "hamlet", denmark.id)
    assert not sub.is_muted and not sub.pin_to_top and sub.color != "#F0a"


async def test_admins_need_a_subscription_too(env: TestEnv) -> None:
    secret = await env.subscribe("othello", "Secret", invite_only=True)
    data = [_change(secret.id, "is_muted", True)]
    assert_error(
        await env.client("iago").post(PROPERTIES, {"subscription_data": data}), "Invalid stream ID"
    )


async def test_former_subscribers_are_not_subscribed(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    hamlet = env.client("hamlet")
    assert_success(await hamlet.delete("/users/me/subscriptions", {"subscriptions": ["Denmark"]}))
    data = [_change(denmark.id, "pin_to_top", True)]
    assert_error(
        await hamlet.post(PROPERTIES, {"subscription_data": data}),
        f"Not subscribed to stream id {denmark.id}",
    )


async def test_subscription_changes_are_all_or_nothing(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    before = await _sub(env, "hamlet", denmark.id)
    data = [
        _change(denmark.id, "pin_to_top", True),
        _change(denmark.id, "color", "#123456"),
        _change(denmark.id, "is_muted", "maybe"),
    ]
    assert_error(
        await env.client("hamlet").post(PROPERTIES, {"subscription_data": data}),
        "is_muted is not a boolean",
    )
    assert await _sub(env, "hamlet", denmark.id) == before


async def test_empty_subscription_data_does_nothing(env: TestEnv) -> None:
    assert_success(await env.client("hamlet").post(PROPERTIES, {"subscription_data": []}))


# --- PATCH /streams/{stream_id}: who may edit -----------------------------------------------


async def test_only_admins_edit_streams(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    secret = await env.subscribe("othello", "Secret", invite_only=True)
    # Zulip 10.2: only administrators and the stream's can_administer_channel_group.
    for name in ("hamlet", "shiva"):
        assert_error(
            await env.client(name).patch(f"/streams/{denmark.id}", {"description": "x"}),
            "You do not have permission to administer this channel.",
        )
    # A guest who cannot read the stream is not told it exists.
    assert_error(
        await env.client("polonius").patch(f"/streams/{denmark.id}", {"description": "x"}),
        "Invalid stream ID",
    )
    # A private stream the caller cannot see does not exist for them.
    assert_error(
        await env.client("hamlet").patch(f"/streams/{secret.id}", {"description": "x"}),
        "Invalid stream ID",
    )
    # Its subscribers learn they are not administrators.
    assert_error(
        await env.client("othello").patch(f"/streams/{secret.id}", {"description": "x"}),
        "You do not have permission to administer this channel.",
    )
    assert_error(
        await env.client("iago").patch("/streams/99999", {"description": "x"}),
        "Invalid stream ID",
    )
    assert (await _stream(env, denmark.id)).description == ""


async def test_empty_update_succeeds(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    body = assert_success(await env.client("iago").patch(f"/streams/{denmark.id}", {}))
    assert body == {"result": "success", "msg": ""}


# --- description and name -------------------------------------------------------------------


async def test_change_description(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    iago = env.client("iago")
    assert_success(
        await iago.patch(f"/streams/{denmark.id}", {"description": "Something <rotten>\nhere"})
    )
    changed = await _stream(env, denmark.id)
    assert changed.description == "Something <rotten> here"
    assert changed.rendered_description == "<p>Something &lt;rotten&gt; here</p>"
    assert_error(
        await iago.patch(f"/streams/{denmark.id}", {"description": "x" * 1025}),
        "description is too long (limit: 1024 characters)",
    )
    assert_success(await iago.patch(f"/streams/{denmark.id}", {"description": "y" * 1024}))
    assert_success(await iago.patch(f"/streams/{denmark.id}", {"description": ""}))
    assert (await _stream(env, denmark.id)).description == ""


async def test_admin_edits_private_stream_without_subscription(env: TestEnv) -> None:
    secret = await env.subscribe("othello", "Secret", invite_only=True)
    assert_success(
        await env.client("iago").patch(
            f"/streams/{secret.id}", {"description": "Hush", "new_name": "Hidden"}
        )
    )
    changed = await _stream(env, secret.id)
    assert (changed.name, changed.description) == ("Hidden", "Hush")


async def test_rename_stream(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("hamlet", "Norway")
    iago = env.client("iago")
    assert_success(await iago.patch(f"/streams/{denmark.id}", {"new_name": "  Elsinore  "}))
    assert (await _stream(env, denmark.id)).name == "Elsinore"
    # A change of case alone is allowed.
    assert_success(await iago.patch(f"/streams/{denmark.id}", {"new_name": "ELSINORE"}))
    assert (await _stream(env, denmark.id)).name == "ELSINORE"
    cases = [
        ("norway", "Stream name 'norway' is already taken."),
        ("ELSINORE", "Stream already has that name!"),
        ("   ", "Stream name can't be empty!"),
        ("x" * 61, "Stream name too long (limit: 60 characters)."),
        ("bad\x00name", "new_name must not contain null bytes"),
    ]
    for new_name, message in cases:
        assert_error(await iago.patch(f"/streams/{denmark.id}", {"new_name": new_name}), message)
    assert (await _stream(env, denmark.id)).name == "ELSINORE"


# --- privacy ------------------------------------------------------------------------------


async def test_make_private_and_public_again(env: TestEnv) -> None:
    denmark = await env.subscribe("iago", "Denmark")
    iago = env.client("iago")
    assert_success(await iago.patch(f"/streams/{denmark.id}", {"is_private": True}))
    changed = await _stream(env, denmark.id)
    # Private streams protect their history unless told otherwise.
    assert changed.invite_only and not changed.history_public_to_subscribers
    assert_success(
        await iago.patch(
            f"/streams/{denmark.id}", {"is_private": True, "history_public_to_subscribers": True}
        )
    )
    assert (await _stream(env, denmark.id)).history_public_to_subscribers
    assert_success(
        await iago.patch(f"/streams/{denmark.id}", {"history_public_to_subscribers": False})
    )
    assert not (await _stream(env, denmark.id)).history_public_to_subscribers
    assert_success(await iago.patch(f"/streams/{denmark.id}", {"is_private": False}))
    changed = await _stream(env, denmark.id)
    assert not changed.invite_only and changed.history_public_to_subscribers


async def test_privacy_changes_need_a_subscription_on_private_streams(env: TestEnv) -> None:
    secret = await env.subscribe("othello", "Secret", invite_only=True)
    iago = env.client("iago")
    assert_error(
        await iago.patch(f"/streams/{secret.id}", {"is_private": False}), "Invalid stream ID"
    )
    # Group settings need only sight of the stream since feature level 349.
    members = await system_group_id(env, "role:members")
    assert_success(
        await iago.patch(f"/streams/{secret.id}", {"can_remove_subscribers_group": members})
    )
    # Zulip lets an unsubscribed admin share a private stream's history.
    assert_success(
        await iago.patch(f"/streams/{secret.id}", {"history_public_to_subscribers": True})
    )
    assert (await _stream(env, secret.id)).invite_only


async def test_invalid_privacy_combinations(env: TestEnv) -> None:
    denmark = await env.subscribe("desdemona", "Denmark")
    secret = await env.subscribe("desdemona", "Secret", invite_only=True)
    await env.set_realm_property("enable_spectator_access", True)
    owner = env.client("desdemona")
    cases = [
        (denmark.id, {"history_public_to_subscribers": False}),
        (denmark.id, {"is_private": False, "history_public_to_subscribers": False}),
        (denmark.id, {"is_private": True, "is_web_public": True}),
        (denmark.id, {"is_web_public": True, "history_public_to_subscribers": False}),
        # Web-public needs the stream to stop being private too.
        (secret.id, {"is_web_public": True}),
    ]
    for stream_id, params in cases:
        assert_error(await owner.patch(f"/streams/{stream_id}", params), "Invalid parameters")
    assert not (await _stream(env, denmark.id)).invite_only
    assert (await _stream(env, secret.id)).invite_only


async def test_web_public_needs_the_realm_and_permission(env: TestEnv) -> None:
    denmark = await env.subscribe("desdemona", "Denmark")
    owner = env.client("desdemona")
    assert_error(
        await owner.patch(f"/streams/{denmark.id}", {"is_web_public": True}),
        "Web-public streams are not enabled.",
    )
    await env.set_realm_property("enable_spectator_access", True)
    # Owners only, by default.
    assert_error(
        await env.client("iago").patch(f"/streams/{denmark.id}", {"is_web_public": True}),
        "Insufficient permission",
    )
    assert not (await _stream(env, denmark.id)).is_web_public
    assert_success(await owner.patch(f"/streams/{denmark.id}", {"is_web_public": True}))
    assert (await _stream(env, denmark.id)).is_web_public
    await set_group_setting(env, "can_create_web_public_channel_group", "role:administrators")
    assert_success(
        await env.client("iago").patch(f"/streams/{denmark.id}", {"is_web_public": False})
    )
    changed = await _stream(env, denmark.id)
    assert not changed.is_web_public and not changed.invite_only
    # Private straight from web-public.
    assert_success(await owner.patch(f"/streams/{denmark.id}", {"is_web_public": True}))
    assert_success(
        await owner.patch(f"/streams/{denmark.id}", {"is_web_public": False, "is_private": True})
    )
    changed = await _stream(env, denmark.id)
    assert changed.invite_only and not changed.is_web_public


async def test_web_public_disabled_on_the_server(settings: Settings) -> None:
    async with running_env(settings.with_(web_public_streams_enabled=False)) as env:
        denmark = await env.subscribe("desdemona", "Denmark")
        await env.set_realm_property("enable_spectator_access", True)
        assert_error(
            await env.client("desdemona").patch(f"/streams/{denmark.id}", {"is_web_public": True}),
            "Web-public streams are not enabled.",
        )
        # Turning it off is always allowed.
        assert_success(
            await env.client("desdemona").patch(f"/streams/{denmark.id}", {"is_web_public": False})
        )


# --- default streams ----------------------------------------------------------------------


async def test_default_stream(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    secret = await env.subscribe("iago", "Secret", invite_only=True)
    iago = env.client("iago")
    assert_success(await iago.patch(f"/streams/{denmark.id}", {"is_default_stream": True}))
    assert await _default_ids(env) == [denmark.id]
    # Again: nothing to do.
    assert_success(await iago.patch(f"/streams/{denmark.id}", {"is_default_stream": True}))
    assert await _default_ids(env) == [denmark.id]
    message = "A default stream cannot be private."
    assert_error(await iago.patch(f"/streams/{denmark.id}", {"is_private": True}), message)
    assert_error(await iago.patch(f"/streams/{secret.id}", {"is_default_stream": True}), message)
    # Private and no longer default, in one request.
    assert_success(
        await iago.patch(f"/streams/{denmark.id}", {"is_private": True, "is_default_stream": False})
    )
    assert await _default_ids(env) == []
    # Public and default in one request.
    assert_success(
        await iago.patch(f"/streams/{secret.id}", {"is_private": False, "is_default_stream": True})
    )
    assert await _default_ids(env) == [secret.id]
    registered = assert_success(await env.client("hamlet").post("/register", {}))
    assert registered["realm_default_streams"] == [secret.id]


# --- posting policy, retention, group -----------------------------------------------------


async def test_stream_post_policy(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    iago = env.client("iago")
    for policy in (2, 3, 4, 1):
        assert_success(await iago.patch(f"/streams/{denmark.id}", {"stream_post_policy": policy}))
        assert (await _stream(env, denmark.id)).stream_post_policy == policy
    for bad, message in (
        (5, "Invalid stream_post_policy"),
        ("x", "stream_post_policy is not valid JSON"),
    ):
        assert_error(
            await iago.patch(f"/streams/{denmark.id}", {"stream_post_policy": bad}), message
        )
    assert_success(await iago.patch(f"/streams/{denmark.id}", {"is_announcement_only": True}))
    assert (await _stream(env, denmark.id)).stream_post_policy == 2
    assert_success(await iago.patch(f"/streams/{denmark.id}", {"is_announcement_only": False}))
    assert (await _stream(env, denmark.id)).stream_post_policy == 1


async def test_message_retention_days(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    owner = env.client("desdemona")
    for raw, stored in (
        (30, 30),
        ("unlimited", -1),
        ("realm_default", None),
        ("forever", -1),
        ("7", 7),
        ('"realm_default"', None),
    ):
        assert_success(await owner.patch(f"/streams/{denmark.id}", {"message_retention_days": raw}))
        assert (await _stream(env, denmark.id)).message_retention_days == stored
    for bad in (0, -3, "never"):
        assert_error(
            await owner.patch(f"/streams/{denmark.id}", {"message_retention_days": bad}),
            f"Bad value for 'message_retention_days': {bad}",
        )
    assert_error(
        await env.client("iago").patch(f"/streams/{denmark.id}", {"message_retention_days": 5}),
        "Must be an organization owner",
        code="UNAUTHORIZED_PRINCIPAL",
    )
    assert (await _stream(env, denmark.id)).message_retention_days is None


def _remove_group(target: Stream) -> object:
    return stream_setting_values(target)["can_remove_subscribers_group"]


async def test_can_remove_subscribers_group(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    iago = env.client("iago")
    members = await system_group_id(env, "role:members")
    everyone = await system_group_id(env, "role:everyone")
    # A bare group id: the form before feature level 320.
    assert_success(
        await iago.patch(f"/streams/{denmark.id}", {"can_remove_subscribers_group": members})
    )
    assert _remove_group(await _stream(env, denmark.id)) == members
    # The name before feature level 197.
    assert_success(
        await iago.patch(f"/streams/{denmark.id}", {"can_remove_subscribers_group_id": everyone})
    )
    assert _remove_group(await _stream(env, denmark.id)) == everyone
    async with env.services.db.write() as conn:
        result = await conn.execute(
            sa.insert(user_group).values(realm_id=env.realm.id, name="Actors", description="")
        )
        actors = int(result.inserted_primary_key[0])  # type: ignore[index]
    # Any group but role:internet, named groups and anonymous ones too (feature level 320).
    for value in (actors, await system_group_id(env, "role:nobody")):
        assert_success(
            await iago.patch(f"/streams/{denmark.id}", {"can_remove_subscribers_group": value})
        )
        assert _remove_group(await _stream(env, denmark.id)) == value
    setting = "can_remove_subscribers_group"
    cases = [
        (
            await system_group_id(env, "role:internet"),
            f"'{setting}' setting cannot be set to 'role:internet' group.",
        ),
        (99999, "Invalid user group"),
    ]
    for group_id, message in cases:
        assert_error(
            await iago.patch(f"/streams/{denmark.id}", {"can_remove_subscribers_group": group_id}),
            message,
        )
    assert_error(
        await iago.patch(
            f"/streams/{denmark.id}",
            {"can_remove_subscribers_group": members, "can_remove_subscribers_group_id": members},
        ),
        "Can't decide between 'can_remove_subscribers_group' and "
        "'can_remove_subscribers_group_id' arguments",
        code="REQUEST_CONFUSING_VAR",
    )
    assert _remove_group(await _stream(env, denmark.id)) == await system_group_id(
        env, "role:nobody"
    )


async def test_failed_update_changes_nothing(env: TestEnv) -> None:
    denmark = await env.subscribe("iago", "Denmark")
    before = await _stream(env, denmark.id)
    iago = env.client("iago")
    # Everything valid but the retention, which only owners may change.
    assert_error(
        await iago.patch(
            f"/streams/{denmark.id}",
            {
                "description": "New",
                "new_name": "Elsinore",
                "is_private": True,
                "is_default_stream": False,
                "stream_post_policy": 2,
                "message_retention_days": 3,
            },
        ),
        "Must be an organization owner",
        code="UNAUTHORIZED_PRINCIPAL",
    )
    assert await _stream(env, denmark.id) == before
    # A bad group, checked after the rest.
    assert_error(
        await iago.patch(
            f"/streams/{denmark.id}",
            {"description": "New", "is_private": True, "can_remove_subscribers_group": 99999},
        ),
        "Invalid user group",
    )
    assert await _stream(env, denmark.id) == before


async def test_many_settings_at_once(env: TestEnv) -> None:
    denmark = await env.subscribe("desdemona", "Denmark")
    members = await system_group_id(env, "role:members")
    assert_success(
        await env.client("desdemona").patch(
            f"/streams/{denmark.id}",
            {
                "description": "All of it",
                "new_name": "Elsinore",
                "is_private": True,
                "history_public_to_subscribers": True,
                "stream_post_policy": 4,
                "message_retention_days": 10,
                "can_remove_subscribers_group": members,
            },
        )
    )
    changed = await _stream(env, denmark.id)
    assert dataclasses.replace(changed, rendered_description="") == dataclasses.replace(
        denmark,
        name="Elsinore",
        description="All of it",
        rendered_description="",
        invite_only=True,
        history_public_to_subscribers=True,
        stream_post_policy=4,
        message_retention_days=10,
        permission_settings=changed.permission_settings,
    )
    values = stream_setting_values(changed)
    assert values["can_remove_subscribers_group"] == members
    # The legacy stream_post_policy 4 is the moderators group (feature level 333).
    assert values["can_send_message_group"] == await system_group_id(env, "role:moderators")
