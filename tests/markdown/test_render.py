"""The RenderResult fields the message pipeline relies on, and the escaping guarantees."""

from __future__ import annotations

import pytest

from hubbub.markdown import (
    LinkableStream,
    Linkifier,
    MentionableGroup,
    MentionableUser,
    RealmEmoji,
    RenderContext,
    render_markdown,
    topic_links,
)
from hubbub.markdown.channel_links import EMPTY_TOPIC_LINK_TEXT, channel_link_targets
from hubbub.topic_names import EMPTY_TOPIC_DISPLAY_NAME


@pytest.fixture
def ctx() -> RenderContext:
    return RenderContext(
        realm_url="https://chat.example.com",
        users=[
            MentionableUser(1, "Iago", "iago@example.com"),
            MentionableUser(2, "King Hamlet", "hamlet@example.com"),
            MentionableUser(3, "Old Bot", "bot@example.com", is_active=False),
        ],
        user_groups=[MentionableGroup(10, "support")],
        streams=[LinkableStream(5, "Verona"), LinkableStream(6, "core team")],
        linkifiers=[
            Linkifier(1, r"#(?P<id>[0-9]+)", "https://github.com/zulip/zulip/issues/{id}"),
            Linkifier(
                2,
                r"(?P<org>[a-z]+)/(?P<repo>[a-z]+)#(?P<id>[0-9]+)",
                "https://github.com/{org}/{repo}/pull/{id}",
            ),
        ],
        realm_emoji=[RealmEmoji("7", "party_parrot", "/user_avatars/2/emoji/parrot.gif")],
        alert_words=["pizza", "Deploy"],
    )


def test_user_mentions(ctx: RenderContext) -> None:
    result = render_markdown("hi @**Iago** and @**King Hamlet|2**", ctx)
    assert result.html == (
        '<p>hi <span class="user-mention" data-user-id="1">@Iago</span> and '
        '<span class="user-mention" data-user-id="2">@King Hamlet</span></p>'
    )
    assert result.mentioned_user_ids == {1, 2}


def test_mention_by_id_only_and_name_mismatch(ctx: RenderContext) -> None:
    assert render_markdown("@**|1**", ctx).mentioned_user_ids == {1}
    result = render_markdown("@**Iago|2**", ctx)
    assert result.mentioned_user_ids == set()
    assert "user-mention" not in result.html


def test_silent_and_inactive_mentions_do_not_notify(ctx: RenderContext) -> None:
    result = render_markdown("@_**Iago** @**Old Bot**", ctx)
    assert result.html == (
        '<p><span class="user-mention silent" data-user-id="1">Iago</span> '
        '<span class="user-mention silent" data-user-id="3">Old Bot</span></p>'
    )
    assert result.mentioned_user_ids == set()


def test_unknown_mention_stays_text(ctx: RenderContext) -> None:
    result = render_markdown("@**Nobody**", ctx)
    assert result.html == "<p>@<strong>Nobody</strong></p>"
    assert result.mentioned_user_ids == set()


@pytest.mark.parametrize("word", ["all", "everyone", "stream", "channel"])
def test_stream_wildcards(ctx: RenderContext, word: str) -> None:
    result = render_markdown(f"@**{word}** look", ctx)
    assert result.html == (
        f'<p><span class="user-mention channel-wildcard-mention" data-user-id="*">@{word}</span>'
        " look</p>"
    )
    assert result.stream_wildcard_mention == word
    assert result.mentions_stream_wildcard
    assert result.topic_wildcard_mention is None


def test_topic_wildcard_and_silent_wildcards(ctx: RenderContext) -> None:
    result = render_markdown("@**topic** @_**all** @_**topic**", ctx)
    assert result.html == (
        '<p><span class="topic-mention">@topic</span> '
        '<span class="user-mention channel-wildcard-mention silent" data-user-id="*">all</span> '
        '<span class="topic-mention silent">topic</span></p>'
    )
    assert result.topic_wildcard_mention == "topic"
    assert result.stream_wildcard_mention is None


def test_a_wildcard_wins_over_a_user_of_that_name() -> None:
    ctx = RenderContext(users=[MentionableUser(4, "channel")])
    result = render_markdown("@**channel**", ctx)
    assert result.mentioned_user_ids == set()
    assert result.stream_wildcard_mention == "channel"


@pytest.mark.parametrize(
    ("content", "mentioned"),
    [
        ("(@**Iago**)", True),
        ("[@**Iago**]", True),
        ("{@**Iago**}", True),
        ("/@**Iago**", True),
        ("'@**Iago**'", True),
        ("a,@**Iago**", False),
        ("a:@**Iago**", False),
        ("a@**Iago**", False),
    ],
)
def test_what_may_come_before_a_mention(ctx: RenderContext, content: str, mentioned: bool) -> None:
    """Zulip 10.2's rule, shared by user, group and wildcard mentions and channel links."""
    assert bool(render_markdown(content, ctx).mentioned_user_ids) is mentioned
    group = content.replace("@**Iago**", "@*support*")
    assert bool(render_markdown(group, ctx).mentioned_group_ids) is mentioned
    link = content.replace("@**Iago**", "#**Verona**")
    assert ('class="stream"' in render_markdown(link, ctx).html) is mentioned


def test_group_mentions(ctx: RenderContext) -> None:
    result = render_markdown("@*support* @_*support* @*nope*", ctx)
    assert result.html == (
        '<p><span class="user-group-mention" data-user-group-id="10">@support</span> '
        '<span class="user-group-mention silent" data-user-group-id="10">support</span> '
        "@<em>nope</em></p>"
    )
    assert result.mentioned_group_ids == {10}


def test_stream_and_topic_links(ctx: RenderContext) -> None:
    result = render_markdown("#**Verona** #**core team>lunch time.x** #**nope**", ctx)
    assert result.html == (
        '<p><a class="stream" data-stream-id="5" href="/#narrow/channel/5-Verona">#Verona</a> '
        '<a class="stream-topic" data-stream-id="6" '
        'href="/#narrow/channel/6-core-team/topic/lunch.20time.2Ex">'
        "#core team &gt; lunch time.x</a> #<strong>nope</strong></p>"
    )
    assert not result.has_link


def test_topic_link_names_a_message_of_the_topic(ctx: RenderContext) -> None:
    """Feature level 347: with a message of the topic known, the URL adds ``/with/``."""
    ctx.topic_link_message_ids = {("Verona", "lunch"): 41}
    result = render_markdown("#**Verona>lunch** #**Verona>dinner**", ctx)
    assert result.html == (
        '<p><a class="stream-topic" data-stream-id="5" '
        'href="/#narrow/channel/5-Verona/topic/lunch/with/41">#Verona &gt; lunch</a> '
        '<a class="stream-topic" data-stream-id="5" '
        'href="/#narrow/channel/5-Verona/topic/dinner">#Verona &gt; dinner</a></p>'
    )


def test_message_links(ctx: RenderContext) -> None:
    """Feature level 319: ``#**channel>topic@id**`` links one message, with no
    ``data-stream-id``; the topic may hold "@" and the last "@digits" is the id."""
    result = render_markdown("#**core team>a@b.c@123** #**nope>x@1**", ctx)
    assert result.html == (
        '<p><a class="message-link" '
        'href="/#narrow/channel/6-core-team/topic/a.40b.2Ec/near/123">'
        "#core team &gt; a@b.c @ \U0001f4ac</a> #<strong>nope&gt;x@1</strong></p>"
    )


def test_empty_topic_links(ctx: RenderContext) -> None:
    """Feature level 346: the empty topic shows as "general chat" in <em>."""
    ctx.topic_link_message_ids = {("Verona", ""): 7}
    result = render_markdown("#**Verona>** and #**Verona>@9**", ctx)
    assert result.html == (
        '<p><a class="stream-topic" data-stream-id="5" '
        'href="/#narrow/channel/5-Verona/topic//with/7">#Verona &gt; <em>general chat</em></a>'
        ' and <a class="message-link" href="/#narrow/channel/5-Verona/topic//near/9">'
        "#Verona &gt; <em>general chat</em> @ \U0001f4ac</a></p>"
    )


def test_empty_topic_link_text_is_the_display_name() -> None:
    assert EMPTY_TOPIC_LINK_TEXT == EMPTY_TOPIC_DISPLAY_NAME


@pytest.mark.parametrize(
    ("content", "names", "topics"),
    [
        ("no links", set(), set()),
        ("#**Verona** #**a>b** #**c>d@4**", {"Verona", "a>b", "a", "c>d@4", "c"},
         {("a", "b"), ("c", "d@4")}),
        # A link starting inside a longer match is found too, as the renderer tries
        # every "#**"; so are links in code.
        ("#**x #**y** `#**z>**`", {"x #", "y", "z>", "z"}, {("z", "")}),
    ],
)  # fmt: skip
def test_channel_link_targets(content: str, names: set[str], topics: set[tuple[str, str]]) -> None:
    assert channel_link_targets(content) == (names, topics)


def test_mentions_in_quotes_are_silent(ctx: RenderContext) -> None:
    """Zulip silences every mention in a quote, so quoting a message notifies nobody it
    mentioned again. (Zulip rewrites the quote's lines, so "` @**x**`" in a quote would
    show "@_**x**"; "`@**x**`" has a backtick before the "@" and stays.)"""
    result = render_markdown(
        "> @**Iago** @**all** @*support* `@**topic**`\n\n```quote\n@**topic**\n```", ctx
    )
    assert result.html == (
        "<blockquote>\n<p>"
        '<span class="user-mention silent" data-user-id="1">Iago</span> '
        '<span class="user-mention channel-wildcard-mention silent" data-user-id="*">all</span> '
        '<span class="user-group-mention silent" data-user-group-id="10">support</span> '
        "<code>@**topic**</code></p>\n</blockquote>\n"
        '<blockquote>\n<p><span class="topic-mention silent">topic</span></p>\n</blockquote>'
    )
    assert not result.mentioned_user_ids
    assert not result.mentioned_group_ids
    assert result.stream_wildcard_mention is None
    assert result.topic_wildcard_mention is None
    # After the quote, mentions notify again.
    assert render_markdown("> quoted\n\n@**Iago**", ctx).mentioned_user_ids == {1}


def test_mentions_in_code_do_not_count(ctx: RenderContext) -> None:
    result = render_markdown("`@**Iago**`\n\n```\n@**all**\n```", ctx)
    assert result.mentioned_user_ids == set()
    assert result.stream_wildcard_mention is None


def test_links_and_attachments(ctx: RenderContext) -> None:
    result = render_markdown(
        "[spec](/user_uploads/2/ab/cd/spec.pdf) and https://example.org/page", ctx
    )
    assert result.links == ["/user_uploads/2/ab/cd/spec.pdf", "https://example.org/page"]
    assert result.has_link
    assert result.has_attachment
    assert not result.has_image
    assert result.attachment_path_ids == ["2/ab/cd/spec.pdf"]


def test_image_link_previews(ctx: RenderContext) -> None:
    result = render_markdown("https://example.org/cat.png", ctx)
    assert result.has_image
    assert result.html.startswith('<div class="message_inline_image">')


def test_realm_links_become_relative(ctx: RenderContext) -> None:
    result = render_markdown("[here](https://chat.example.com/#narrow/channel/5-Verona)", ctx)
    assert result.html == '<p><a href="#narrow/channel/5-Verona">here</a></p>'


def test_unsafe_links_are_not_links(ctx: RenderContext) -> None:
    result = render_markdown("[x](javascript:alert(1))", ctx)
    assert "<a" not in result.html
    assert not result.has_link


def test_linkifiers(ctx: RenderContext) -> None:
    result = render_markdown("fix #123 and zulip/zulip#9, not a#5", ctx)
    assert result.html == (
        '<p>fix <a href="https://github.com/zulip/zulip/issues/123">#123</a> and '
        '<a href="https://github.com/zulip/zulip/pull/9">zulip/zulip#9</a>, not a#5</p>'
    )
    assert result.links == [
        "https://github.com/zulip/zulip/issues/123",
        "https://github.com/zulip/zulip/pull/9",
    ]


def test_topic_links(ctx: RenderContext) -> None:
    assert topic_links("bug #42 see zulip.com and zulip/zulip#9", ctx) == [
        {"url": "https://github.com/zulip/zulip/issues/42", "text": "#42"},
        {"url": "https://zulip.com", "text": "zulip.com"},
        {"url": "https://github.com/zulip/zulip/pull/9", "text": "zulip/zulip#9"},
    ]
    assert topic_links("no links here", ctx) == []


def test_invalid_linkifier_is_ignored(ctx: RenderContext) -> None:
    ctx = RenderContext(linkifiers=[Linkifier(1, r"(?P<x>[", "https://x/{x}")])
    assert render_markdown("[ hi", ctx).html == "<p>[ hi</p>"
    assert topic_links("[ hi", ctx) == []


def test_alert_words(ctx: RenderContext) -> None:
    assert render_markdown("Who wants PIZZA?", ctx).alert_words == {"pizza"}
    assert render_markdown("deploy now", ctx).alert_words == {"Deploy"}
    result = render_markdown("pizzas are not it", ctx)
    assert result.alert_words == set()
    assert not result.has_alert_word


def test_alert_words_ignore_code_blocks(ctx: RenderContext) -> None:
    assert render_markdown("```\npizza\n```", ctx).alert_words == set()


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"),
        ('<img src=x onerror="alert(1)">', '<p>&lt;img src=x onerror="alert(1)"&gt;</p>'),
        ("`<b>`", "<p><code>&lt;b&gt;</code></p>"),
        (
            '[a"b](https://x.org/"onmouseover=")',
            '<p><a href="https://x.org/&quot;onmouseover=&quot;">a"b</a></p>',
        ),
    ],
)
def test_raw_html_is_escaped(ctx: RenderContext, source: str, expected: str) -> None:
    assert render_markdown(source, ctx).html == expected


def test_mention_names_are_escaped() -> None:
    ctx = RenderContext(users=[MentionableUser(9, "<b>Eve</b>")])
    assert render_markdown("@**<b>Eve</b>**", ctx).html == (
        '<p><span class="user-mention" data-user-id="9">@&lt;b&gt;Eve&lt;/b&gt;</span></p>'
    )


def test_emoji(ctx: RenderContext) -> None:
    assert render_markdown(":party_parrot: :+1:", ctx).html == (
        '<p><img alt=":party_parrot:" class="emoji" src="/user_avatars/2/emoji/parrot.gif" '
        'title="party parrot"> <span aria-label="+1" class="emoji emoji-1f44d" role="img" '
        'title="+1">:+1:</span></p>'
    )


def test_tex_renders_mathml_in_katex_spans(ctx: RenderContext) -> None:
    html = render_markdown("$$x^2$$", ctx).html
    assert html.startswith('<p><span class="katex"><span class="katex-mathml"><math')
    assert '<annotation encoding="application/x-tex">x^2</annotation>' in html
    assert render_markdown("$$\\nosuchmacro{a}$$", ctx).html == (
        '<p><span class="tex-error">$$\\nosuchmacro{a}$$</span></p>'
    )


def test_empty_and_whitespace_content(ctx: RenderContext) -> None:
    assert render_markdown("", ctx).html == ""
    assert render_markdown("   \n\n", ctx).html == ""
