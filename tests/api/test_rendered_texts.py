"""Channel descriptions, text profile field values and the organization description render
as Markdown in their realm, as Zulip 10.2 renders them (its ``render_stream_description``:
the message renderer with the realm and no previews), in responses and in events."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from hubbub.db.tables import realm as realm_table
from hubbub.rendering import DEFAULT_REALM_DESCRIPTION, DEFAULT_REALM_DESCRIPTION_HTML
from tests.emoji_helpers import add_emoji
from tests.events.verify import verify_action
from tests.helpers import TestEnv, assert_success

SUBSCRIPTIONS = "/users/me/subscriptions"
# One of each kind of syntax a description may hold; no image or link that would preview.
RICH = (
    "**bold** [link](https://example.com) `code` #**Denmark** @**Hamlet** @_**Othello** "
    "#123 :party: :octopus: http://localhost/#narrow/channel/1-x"
)


async def _realm_parts(env: TestEnv) -> int:
    """A channel to link, a custom emoji and a linkifier; the channel's id."""
    denmark = await env.subscribe("hamlet", "Denmark")
    await add_emoji(env, "iago", "party")
    assert_success(
        await env.client("iago").post(
            "/realm/filters",
            {"pattern": "#(?P<id>[0-9]+)", "url_template": "https://t.example/{id}"},
        )
    )
    return denmark.id


async def _as_message(env: TestEnv, content: str) -> str:
    body = assert_success(await env.client("hamlet").post("/messages/render", {"content": content}))
    return str(body["rendered"])


def _check_rich(env: TestEnv, html: str, denmark_id: int) -> None:
    hamlet, othello = env.users["hamlet"].id, env.users["othello"].id
    for part in (
        "<p><strong>bold</strong> ",
        '<a href="https://example.com">link</a>',
        "<code>code</code>",
        f'<a class="stream" data-stream-id="{denmark_id}" '
        f'href="/#narrow/channel/{denmark_id}-Denmark">#Denmark</a>',
        f'<span class="user-mention" data-user-id="{hamlet}">@Hamlet</span>',
        f'<span class="user-mention silent" data-user-id="{othello}">Othello</span>',
        '<a href="https://t.example/123">#123</a>',
        '<img alt=":party:" class="emoji" src="/user_avatars/',
        '<span aria-label="octopus" class="emoji emoji-1f419" role="img" title="octopus">',
        # A link into the realm becomes relative, as in messages.
        '<a href="#narrow/channel/1-x">',
    ):
        assert part in html, (part, html)


async def _stream(env: TestEnv, stream_id: int) -> dict[str, Any]:
    body = assert_success(await env.client("iago").get(f"/streams/{stream_id}"))
    return dict(body["stream"])


async def test_new_channel_description_renders_markdown(env: TestEnv) -> None:
    denmark_id = await _realm_parts(env)

    async def create() -> None:
        subscriptions = [{"name": "Elsinore", "description": RICH}]
        assert_success(
            await env.client("iago").post(SUBSCRIPTIONS, {"subscriptions": subscriptions})
        )

    events = await verify_action(env, env.users["othello"], create)
    created = [e for e in events if e["type"] == "stream" and e["op"] == "create"]
    assert len(created) == 1
    html = created[0]["streams"][0]["rendered_description"]
    _check_rich(env, html, denmark_id)
    # Exactly what the same text renders to as a message.
    assert html == await _as_message(env, RICH)
    stream_id = created[0]["streams"][0]["stream_id"]
    assert (await _stream(env, stream_id))["rendered_description"] == html


async def test_changed_channel_description_event_carries_markdown(env: TestEnv) -> None:
    denmark_id = await _realm_parts(env)
    elsinore = await env.subscribe("othello", "Elsinore")

    async def change() -> None:
        params = {"description": RICH}
        assert_success(await env.client("iago").patch(f"/streams/{elsinore.id}", params))

    events = await verify_action(env, env.users["othello"], change, num_events=1)
    event = events[0]
    assert (event["type"], event["op"], event["property"]) == ("stream", "update", "description")
    assert event["value"] == RICH
    _check_rich(env, event["rendered_description"], denmark_id)
    assert event["rendered_description"] == await _as_message(env, RICH)
    assert (await _stream(env, elsinore.id))["rendered_description"] == (
        event["rendered_description"]
    )


async def test_descriptions_have_no_previews(env: TestEnv) -> None:
    image = "https://example.com/castle.png"
    # A message previews the image; a description only links it (Zulip's no_previews).
    assert "message_inline_image" in await _as_message(env, image)
    elsinore = await env.subscribe("othello", "Elsinore")
    assert_success(
        await env.client("iago").patch(f"/streams/{elsinore.id}", {"description": image})
    )
    assert (await _stream(env, elsinore.id))["rendered_description"] == (
        f'<p><a href="{image}">{image}</a></p>'
    )


async def test_unresolved_syntax_is_not_a_mention(env: TestEnv) -> None:
    elsinore = await env.subscribe("othello", "Elsinore")
    text = "@**Nobody** #**Nowhere** :nonesuch:"
    assert_success(await env.client("iago").patch(f"/streams/{elsinore.id}", {"description": text}))
    # As in a message: what names nobody is only bold text.
    assert (await _stream(env, elsinore.id))["rendered_description"] == (
        "<p>@<strong>Nobody</strong> #<strong>Nowhere</strong> :nonesuch:</p>"
    )


async def _create_field(env: TestEnv, name: str, field_type: int) -> int:
    body = assert_success(
        await env.client("iago").post(
            "/realm/profile_fields", {"name": name, "field_type": field_type}
        )
    )
    return int(body["id"])


async def test_text_profile_values_render_markdown(env: TestEnv) -> None:
    denmark_id = await _realm_parts(env)
    bio = await _create_field(env, "Biography", 2)
    phone = await _create_field(env, "Phone", 1)
    pronouns = await _create_field(env, "Pronouns", 8)
    short = "**Prince** of #**Denmark**"
    data = [
        {"id": bio, "value": RICH},
        {"id": phone, "value": short},
        {"id": pronouns, "value": "**he**/him"},
    ]

    async def change() -> None:
        assert_success(await env.client("hamlet").patch("/users/me/profile_data", {"data": data}))

    events = await verify_action(env, env.users["othello"], change, num_events=3)
    changes = {e["person"]["custom_profile_field"]["id"]: e["person"] for e in events}
    assert {e["type"] for e in events} == {"realm_user"}
    rendered = changes[bio]["custom_profile_field"]["rendered_value"]
    _check_rich(env, rendered, denmark_id)
    assert rendered == await _as_message(env, RICH)
    assert changes[phone]["custom_profile_field"]["rendered_value"] == (
        f'<p><strong>Prince</strong> of <a class="stream" data-stream-id="{denmark_id}" '
        f'href="/#narrow/channel/{denmark_id}-Denmark">#Denmark</a></p>'
    )
    # Pronouns are text Zulip does not render.
    assert "rendered_value" not in changes[pronouns]["custom_profile_field"]
    profile = assert_success(
        await env.client("othello").get(
            f"/users/{env.users['hamlet'].id}", {"include_custom_profile_fields": True}
        )
    )["user"]["profile_data"]
    assert profile[str(bio)]["rendered_value"] == rendered
    assert profile[str(pronouns)] == {"value": "**he**/him"}


async def _server_description(env: TestEnv, description: str) -> str:
    async with env.services.db.write() as conn:
        await conn.execute(sa.update(realm_table).values(description=description))
    body = assert_success(await env.client(host="localhost").get("/server_settings"))
    return str(body["realm_description"])


async def test_organization_description_renders_markdown(env: TestEnv) -> None:
    denmark_id = await _realm_parts(env)
    html = await _server_description(env, RICH)
    _check_rich(env, html, denmark_id)
    assert html == await _as_message(env, RICH)
    # /register keeps the Markdown source, as Zulip's realm_description does.
    state = assert_success(
        await env.client("hamlet").post("/register", {"fetch_event_types": ["realm"]})
    )
    assert state["realm_description"] == RICH


async def test_empty_organization_description_has_zulips_text(env: TestEnv) -> None:
    assert await _server_description(env, "") == "<p>The coolest place in the universe.</p>"
    # The shortcut that spares a new server the renderer says what the renderer says.
    assert await _as_message(env, DEFAULT_REALM_DESCRIPTION) == DEFAULT_REALM_DESCRIPTION_HTML


async def test_a_changed_organization_description_is_rendered_again(env: TestEnv) -> None:
    assert await _server_description(env, "*one*") == "<p><em>one</em></p>"
    assert await _server_description(env, "*one*") == "<p><em>one</em></p>"
    assert await _server_description(env, "**two**") == "<p><strong>two</strong></p>"


async def test_description_links_only_channels_its_writer_may_read(env: TestEnv) -> None:
    secret = await env.subscribe("desdemona", "Secret", invite_only=True)
    elsinore = await env.subscribe("othello", "Elsinore")
    text = "See #**Secret** and #**Elsinore**"
    secret_link = (
        f'<a class="stream" data-stream-id="{secret.id}" '
        f'href="/#narrow/channel/{secret.id}-Secret">#Secret</a>'
    )
    elsinore_link = (
        f'<a class="stream" data-stream-id="{elsinore.id}" '
        f'href="/#narrow/channel/{elsinore.id}-Elsinore">#Elsinore</a>'
    )
    # An administrator who is not subscribed to the private channel cannot link it.
    assert_success(await env.client("iago").patch(f"/streams/{elsinore.id}", {"description": text}))
    assert (await _stream(env, elsinore.id))["rendered_description"] == (
        f"<p>See #<strong>Secret</strong> and {elsinore_link}</p>"
    )
    # Nor when creating a channel.
    subscriptions = [{"name": "Moat", "description": text}]
    assert_success(await env.client("iago").post(SUBSCRIPTIONS, {"subscriptions": subscriptions}))
    streams = assert_success(await env.client("iago").get("/streams"))["streams"]
    moat = next(s for s in streams if s["name"] == "Moat")
    assert moat["rendered_description"] == (
        f"<p>See #<strong>Secret</strong> and {elsinore_link}</p>"
    )
    # A subscriber can.
    assert_success(
        await env.client("desdemona").patch(f"/streams/{elsinore.id}", {"description": text + "."})
    )
    assert (await _stream(env, elsinore.id))["rendered_description"] == (
        f"<p>See {secret_link} and {elsinore_link}.</p>"
    )
    # Profile values render with no writer, as Zulip renders them: every channel links.
    bio = await _create_field(env, "Biography", 2)
    data = [{"id": bio, "value": text}]
    assert_success(await env.client("hamlet").patch("/users/me/profile_data", {"data": data}))
    profile = assert_success(
        await env.client("othello").get(
            f"/users/{env.users['hamlet'].id}", {"include_custom_profile_fields": True}
        )
    )["user"]["profile_data"]
    assert profile[str(bio)]["rendered_value"] == f"<p>See {secret_link} and {elsinore_link}</p>"
