"""``:name:`` for a realm's custom emoji: rendered as Zulip renders it (an ``img`` with
the emoji's ``source_url``), winning over a Unicode emoji of the same name, and only while
the emoji is active."""

from __future__ import annotations

from hubbub.markdown import RenderContext, render_markdown
from hubbub.markdown.context import RealmEmoji
from hubbub.queries.render_context import load_render_context
from tests.emoji_helpers import add_emoji, gif_bytes, post_emoji
from tests.helpers import TestEnv, assert_success
from tests.messages_helpers import send_stream_message

PARTY = RealmEmoji(id="7", name="party_parrot", source_url="/user_avatars/2/emoji/images/ab.gif")
SMILE = RealmEmoji(id="8", name="smile", source_url="/user_avatars/2/emoji/images/cd.png")


def _html(content: str, *emoji: RealmEmoji) -> str:
    return render_markdown(content, RenderContext(realm_emoji=list(emoji))).html


def test_custom_emoji_is_an_image() -> None:
    assert _html("hi :party_parrot:!", PARTY) == (
        '<p>hi <img alt=":party_parrot:" class="emoji" '
        'src="/user_avatars/2/emoji/images/ab.gif" title="party parrot">!</p>'
    )
    # Unknown names stay text; in code they are never emoji.
    assert _html(":party_parrot:") == "<p>:party_parrot:</p>"
    assert _html("`:party_parrot:`", PARTY) == "<p><code>:party_parrot:</code></p>"


def test_custom_emoji_wins_over_unicode_and_zulip() -> None:
    zulip = RealmEmoji(id="9", name="zulip", source_url="/user_avatars/2/emoji/images/ef.png")
    assert _html(":smile: :zulip:", SMILE, zulip) == (
        '<p><img alt=":smile:" class="emoji" src="/user_avatars/2/emoji/images/cd.png" '
        'title="smile"> <img alt=":zulip:" class="emoji" '
        'src="/user_avatars/2/emoji/images/ef.png" title="zulip"></p>'
    )
    # Typed as a Unicode character, the emoji stays the Unicode one.
    assert "emoji-1f642" in _html("🙂", SMILE)


async def _rendered(env: TestEnv, content: str) -> str:
    message_id = await send_stream_message(env, "hamlet", "Denmark", content)
    body = assert_success(await env.client("hamlet").get(f"/messages/{message_id}"))
    return str(body["message"]["content"])


async def test_messages_show_the_realms_emoji(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    party = await add_emoji(env, "hamlet", "party")
    assert_success(await post_emoji(env, "hamlet", "dance", gif_bytes(), "dance.gif", "image/gif"))
    html = await _rendered(env, "a :party: and a :dance: and :party:")
    dance = next(
        e
        for e in assert_success(await env.client("hamlet").get("/realm/emoji"))["emoji"].values()
        if e["name"] == "dance"
    )
    # An animated emoji shows its animated image; clients swap in the still if they like.
    assert html == (
        f'<p>a <img alt=":party:" class="emoji" src="{party["source_url"]}" title="party"> '
        f'and a <img alt=":dance:" class="emoji" src="{dance["source_url"]}" title="dance"> '
        f'and <img alt=":party:" class="emoji" src="{party["source_url"]}" title="party"></p>'
    )
    # A deactivated emoji no longer renders in new messages; old ones keep their HTML.
    assert_success(await env.client("hamlet").delete("/realm/emoji/party"))
    assert await _rendered(env, ":party:") == "<p>:party:</p>"


async def test_render_context_reads_emoji_only_when_named(env: TestEnv) -> None:
    await add_emoji(env, "hamlet", "party")
    async with env.services.db.read() as conn:
        sender = env.users["hamlet"]
        named = await load_render_context(conn, env.realm, sender, content="so :party:")
        plain = await load_render_context(conn, env.realm, sender, content="no emoji here")
        unknown = await load_render_context(conn, env.realm, sender, content=None)
    assert [e.name for e in named.realm_emoji] == ["party"]
    assert plain.realm_emoji == []
    assert [e.name for e in unknown.realm_emoji] == ["party"]
