"""Channel links in messages link only channels the sender may read (Zulip 10.2's
``get_stream_name_map`` with the sender as acting user), and topic links name the
oldest message of the topic the sender may read (feature level 347)."""

from __future__ import annotations

import pytest

from hubbub.queries.render_context import load_render_context
from tests.helpers import TestEnv, assert_success
from tests.messages_helpers import send_stream_message

SUBSCRIPTIONS = "/users/me/subscriptions"


async def _render(env: TestEnv, user: str, content: str) -> str:
    body = assert_success(await env.client(user).post("/messages/render", {"content": content}))
    return str(body["rendered"])


async def _stored(env: TestEnv, message_id: int) -> str:
    body = assert_success(await env.client("desdemona").get(f"/messages/{message_id}"))
    return str(body["message"]["content"])


def _channel_link(channel_id: int, name: str) -> str:
    return (
        f'<a class="stream" data-stream-id="{channel_id}" '
        f'href="/#narrow/channel/{channel_id}-{name}">#{name}</a>'
    )


async def _create_private(env: TestEnv, name: str, *, shared_history: bool = True) -> int:
    params = {
        "subscriptions": [{"name": name}],
        "invite_only": True,
        "history_public_to_subscribers": shared_history,
    }
    assert_success(await env.client("desdemona").post(SUBSCRIPTIONS, params))
    found = assert_success(await env.client("desdemona").get("/get_stream_id", {"stream": name}))
    return int(found["stream_id"])


async def test_a_private_channel_links_only_for_those_who_may_read_it(env: TestEnv) -> None:
    secret = await _create_private(env, "Secret")
    denmark = await env.subscribe("hamlet", "Denmark")
    content = "#**Secret** #**Secret>plans** #**Secret>plans@1** #**Denmark**"
    # The sender cannot read Secret: its links stay text, revealing neither id nor name.
    message_id = await send_stream_message(env, "hamlet", "Denmark", content)
    stored = await _stored(env, message_id)
    assert stored == (
        "<p>#<strong>Secret</strong> #<strong>Secret&gt;plans</strong> "
        f"#<strong>Secret&gt;plans@1</strong> {_channel_link(denmark.id, 'Denmark')}</p>"
    )
    # A subscriber's links resolve, in a send and in a preview alike.
    await env.subscribe("desdemona", "Denmark")
    sent = await _stored(env, await send_stream_message(env, "desdemona", "Denmark", content))
    assert sent == await _render(env, "desdemona", content)
    assert sent.startswith(f'<p>{_channel_link(secret, "Secret")} <a class="stream-topic"')
    assert (
        f'<a class="message-link" href="/#narrow/channel/{secret}-Secret/topic/plans/near/1">'
        in sent
    )
    # So does an edit, rendered for its sender.
    edit = {"content": "now #**Secret**"}
    assert_success(await env.client("hamlet").patch(f"/messages/{message_id}", edit))
    assert await _stored(env, message_id) == "<p>now #<strong>Secret</strong></p>"


async def test_content_access_through_a_group_links_the_channel(env: TestEnv) -> None:
    """Zulip 10.2 asks for content access, which can_subscribe_group grants (feature
    level 354), not for a subscription."""
    secret = await _create_private(env, "Secret")
    assert await _render(env, "hamlet", "#**Secret**") == "<p>#<strong>Secret</strong></p>"
    only_hamlet = {"direct_members": [env.users["hamlet"].id], "direct_subgroups": []}
    setting = {"can_subscribe_group": {"new": only_hamlet}}
    assert_success(await env.client("desdemona").patch(f"/streams/{secret}", setting))
    assert (
        await _render(env, "hamlet", "#**Secret**") == f"<p>{_channel_link(secret, 'Secret')}</p>"
    )
    # Administrators have metadata access only, which is not enough.
    assert await _render(env, "iago", "#**Secret**") == "<p>#<strong>Secret</strong></p>"


async def test_guests_link_only_channels_they_may_read(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    web = await env.subscribe("hamlet", "Web", is_web_public=True)
    rendered = await _render(env, "polonius", "#**Denmark** #**Web**")
    assert rendered == f"<p>#<strong>Denmark</strong> {_channel_link(web.id, 'Web')}</p>"
    await env.subscribe("polonius", "Denmark")
    assert _channel_link(denmark.id, "Denmark") in await _render(env, "polonius", "#**Denmark**")


async def test_archived_channels_still_link(env: TestEnv) -> None:
    """Zulip 10.0 keeps an archived channel's name and content access, and its link
    lookup does not leave archived channels out."""
    old = await env.subscribe("hamlet", "Old")
    assert_success(await env.client("iago").delete(f"/streams/{old.id}"))
    assert await _render(env, "hamlet", "#**Old**") == f"<p>{_channel_link(old.id, 'Old')}</p>"
    # A new channel that takes the archived one's name wins the link.
    new = await env.subscribe("hamlet", "Old")
    assert await _render(env, "hamlet", "#**Old**") == f"<p>{_channel_link(new.id, 'Old')}</p>"


async def test_topic_links_name_the_oldest_readable_message(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    first = await send_stream_message(env, "hamlet", "Denmark", "one", topic="Lunch")
    await send_stream_message(env, "hamlet", "Denmark", "two", topic="lunch")
    base = f"/#narrow/channel/{denmark.id}-Denmark/topic"
    # Topics match ignoring case, as the topic narrow does; anyone who may read the
    # channel's shared history gets its first message, and a topic with none no /with/.
    rendered = await _render(env, "othello", "#**Denmark>LUNCH** #**Denmark>dinner**")
    assert f'href="{base}/LUNCH/with/{first}">#Denmark &gt; LUNCH</a>' in rendered
    assert f'href="{base}/dinner">#Denmark &gt; dinner</a>' in rendered


async def test_protected_history_names_the_senders_own_oldest_message(env: TestEnv) -> None:
    secret = await _create_private(env, "Secret", shared_history=False)
    before = await send_stream_message(env, "desdemona", "Secret", "early", topic="plans")
    await env.subscribe("othello", "Secret")
    after = await send_stream_message(env, "desdemona", "Secret", "later", topic="plans")
    base = f"/#narrow/channel/{secret}-Secret/topic/plans"
    assert f'href="{base}/with/{before}"' in await _render(env, "desdemona", "#**Secret>plans**")
    assert f'href="{base}/with/{after}"' in await _render(env, "othello", "#**Secret>plans**")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("no link here", []),
        ("#**Denmark** and #**Nope>x**", ["Denmark"]),
        ("`#**Denmark>x**` #**Scotland**", ["Denmark", "Scotland"]),
    ],
)
async def test_only_the_channels_a_message_names_are_loaded(
    env: TestEnv, content: str, expected: list[str]
) -> None:
    for name in ("Denmark", "Scotland", "Verona"):
        await env.subscribe("hamlet", name)
    async with env.services.db.read() as conn:
        ctx = await load_render_context(conn, env.realm, env.users["hamlet"], content=content)
    assert sorted(s.name for s in ctx.streams) == expected


async def test_many_topic_links_are_looked_up_in_batches(env: TestEnv) -> None:
    """More topic links than one statement's lookups still each name their message."""
    denmark = await env.subscribe("hamlet", "Denmark")
    first = await send_stream_message(env, "hamlet", "Denmark", "a", topic="t0")
    last = await send_stream_message(env, "hamlet", "Denmark", "b", topic="t150")
    rendered = await _render(env, "hamlet", " ".join(f"#**Denmark>t{i}**" for i in range(151)))
    base = f"/#narrow/channel/{denmark.id}-Denmark/topic"
    assert f'href="{base}/t0/with/{first}"' in rendered
    assert f'href="{base}/t150/with/{last}"' in rendered
    assert rendered.count("/with/") == 2
    assert rendered.count('class="stream-topic"') == 151
