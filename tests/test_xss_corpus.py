"""Every renderer entry point, fed a corpus of XSS payloads, produces HTML in which an HTML5
parser finds no script-capable element, event handler, style or script URL."""

from __future__ import annotations

import dataclasses
from typing import Any

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
from hubbub.markdown.images import UploadPreview
from hubbub.markdown.sanitize import sanitize_html, url_is_safe
from hubbub.markdown.tex import render_tex
from hubbub.rendering import render_text
from tests.helpers import TestEnv, assert_success
from tests.xss_corpus import PAYLOADS, TEX_PAYLOADS, message_corpus, problems

REALM_URL = "http://zulip.testserver"

# Linkifiers as an older server may have stored them, before templates were checked.
STORED_LINKIFIERS = [
    Linkifier(id=1, pattern=r"#(?P<id>[^\s]+)", url_template="https://t.example/{id}"),
    Linkifier(id=2, pattern=r"JS-(?P<id>[^\s]+)", url_template="javascript:alert({id})"),
    Linkifier(id=3, pattern=r"DA-(?P<id>[0-9]+)", url_template="data:text/html,{id}"),
    Linkifier(id=4, pattern=r"VB-(?P<id>[0-9]+)", url_template="vbscript:msgbox({id})"),
    Linkifier(id=5, pattern=r"(?P<url>[a-z]+:[^\s]+)", url_template="{+url}"),
]


def _hostile_context() -> RenderContext:
    """Users, groups and streams named after the payloads, and hostile stored data."""
    names = PAYLOADS + [p.strip() for p in PAYLOADS]
    return RenderContext(
        realm_url=REALM_URL,
        users=[
            MentionableUser(id=i + 10, full_name=name, email=f"u{i}@x.example")
            for i, name in enumerate(names)
        ],
        user_groups=[MentionableGroup(id=i + 10, name=name) for i, name in enumerate(names)],
        streams=[LinkableStream(id=i + 10, name=name) for i, name in enumerate(names)],
        linkifiers=STORED_LINKIFIERS,
        realm_emoji=[
            RealmEmoji(id="1", name="evil", source_url="javascript:alert(1)"),
            RealmEmoji(id="2", name="quote", source_url='/x" onerror="alert(1)'),
        ],
        translate_emoticons=True,
        upload_previews={
            "2/ab/x.png": UploadPreview(
                thumbnail_url='/t" onerror="alert(1)',
                width=1,
                height=1,
                content_type='image/png" onload="x',
                transcoded="javascript:alert(1)",
            )
        },
    )


def test_corpus_is_large() -> None:
    assert len(message_corpus()) >= 300


def test_checker_sees_what_a_browser_would() -> None:
    # The checker itself must fail on each class of hole.
    assert problems("<p>fine</p>") == []
    assert problems("<img src=x onerror=alert(1)>")
    assert problems("<a href=' jav&#x09;ascript:alert(1)'>x</a>")
    assert problems("<math><mtext><script>alert(1)</script></mtext></math>")
    assert problems('<span style="background:url(x)">x</span>')
    assert problems('<math><mrow href="javascript:alert(1)">x</mrow></math>')


def test_every_message_in_the_corpus_renders_safely() -> None:
    ctx = _hostile_context()
    failures = {}
    extra = [
        ":evil: :quote: [x](/user_uploads/2/ab/x.png)",
        "[x](/user_uploads/2/ab/x.png) #1 JS-1 DA-1 VB-1 javascript:alert(1)",
    ]
    for content in [*message_corpus(), *extra]:
        html = render_markdown(content, ctx).html
        found = problems(html)
        if found or "\x02" in html or "\x03" in html:
            failures[content] = (found, html)
    assert failures == {}


def test_tex_text_commands_are_escaped_at_the_source() -> None:
    # Without the sanitizer: the TeX converter's own output holds no markup from the text.
    for tex in TEX_PAYLOADS:
        for display in (False, True):
            html = render_tex(tex, display=display)
            if html is None:
                continue
            assert problems(html) == [], (tex, html)
            assert "<img" not in html and "<script" not in html and "<svg" not in html
            assert ' href="' not in html and ' style="' not in html and ' class="x' not in html


def test_tex_keeps_its_meaning() -> None:
    html = render_markdown(r"$$\text{a<b} \frac{1}{2}$$", RenderContext()).html
    assert "<mtext>a&lt;b</mtext>" in html and "<mfrac>" in html


def test_description_renderings_are_safe() -> None:
    # Channel descriptions, profile field values, the organization description: Markdown
    # without previews, in a realm whose users, groups and channels are named after the
    # payloads.
    ctx = dataclasses.replace(_hostile_context(), inline_image_preview=False)
    for payload in PAYLOADS:
        for text in (
            payload,
            f"a\n\n{payload}\nb",
            f"{payload}\r\n\r\n{payload}",
            f"@**{payload}** #**{payload}** @*{payload}* [x]({payload}) :evil: JS-1",
        ):
            html = render_text(text, ctx)
            assert problems(html) == [], (text, html)
            assert "\x02" not in html and "\x00" not in html


def test_topic_links_never_carry_script_urls() -> None:
    ctx = RenderContext(linkifiers=STORED_LINKIFIERS)
    for payload in PAYLOADS:
        for topic in (payload, f"JS-{payload}", "JS-1 DA-2 VB-3 #4", f"see {payload} now"):
            for link in topic_links(topic, ctx):
                assert url_is_safe(link["url"]), (topic, link)
    links = topic_links("JS-1 DA-2 VB-3 #4", ctx)
    assert links == [{"url": "https://t.example/4", "text": "#4"}]


@pytest.mark.parametrize(
    "markup",
    [
        "<img src=x onerror=alert(1)>",
        "<script>alert(1)</script><p>x</p>",
        '<a href="javascript:alert(1)">x</a>',
        '<a href=" JAVA&#x09;SCRIPT:alert(1)">x</a>',
        '<img src="data:image/svg+xml,<svg onload=alert(1)>">',
        '<img data-src-fullsize="javascript:alert(1)" src="/x.png">',
        '<span class="emoji" style="position:fixed">x</span>',
        '<th style="text-align: left; background: url(x)">x</th>',
        '<math><mrow href="javascript:alert(1)"><mi>x</mi></mrow></math>',
        '<math><mrow href="https://x.example"><mi>x</mi></mrow></math>',
        "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
        "<svg><a xlink:href='javascript:alert(1)'>x</a></svg>",
        "<iframe srcdoc='<script>alert(1)</script>'></iframe>",
        "<p title='x\" onmouseover=\"alert(1)'>x</p>",
        "<!--><img src=x onerror=alert(1)>-->",
        '<noscript><p title="</noscript><img src=x onerror=alert(1)>">',
    ],
)
def test_sanitizer_removes_what_the_renderer_never_writes(markup: str) -> None:
    cleaned = sanitize_html(markup)
    assert problems(cleaned) == [], cleaned
    assert cleaned != markup


def test_sanitizer_keeps_zulip_markup_byte_for_byte() -> None:
    markup = (
        '<p><span class="user-mention silent" data-user-id="3">Iago</span> '
        '<a href="http://x:port/y">x</a> <code>&quot;q&quot;</code></p>\n'
        '<div class="codehilite" data-code-language="Python"><pre><span></span><code>'
        '<span class="nb">print</span><span class="p">(</span></code></pre></div>\n'
        '<table><thead><tr><th style="text-align: center;">a</th></tr></thead></table>\n'
        '<p><span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">'
        ":smile:</span></p>"
    )
    assert sanitize_html(markup) == markup


# Through the API: previews, sends, edits and scheduled sends, descriptions and profile
# fields all reach the same renderers.
API_CORPUS = [w for p in PAYLOADS[::3] for w in (p, f"$${TEX_PAYLOADS[0]}$$ {p}", f"[x]({p})")]


async def test_render_endpoint_corpus(env: TestEnv) -> None:
    client = env.client("hamlet")
    for content in API_CORPUS + [f"$${tex}$$" for tex in TEX_PAYLOADS]:
        rendered = assert_success(await client.post("/messages/render", {"content": content}))[
            "rendered"
        ]
        assert problems(rendered) == [], (content, rendered)


async def test_sent_and_edited_messages_are_safe(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    client = env.client("hamlet")
    for content in API_CORPUS[:30]:
        sent = assert_success(
            await client.post(
                "/messages",
                {"type": "stream", "to": denmark.id, "topic": "t", "content": content},
            )
        )["id"]
        fetched = assert_success(await client.get(f"/messages/{sent}"))["message"]
        assert problems(fetched["content"]) == [], (content, fetched["content"])
        assert_success(await client.patch(f"/messages/{sent}", {"content": f"edited {content}"}))
        fetched = assert_success(await client.get(f"/messages/{sent}"))["message"]
        assert problems(fetched["content"]) == [], (content, fetched["content"])


async def test_stream_descriptions_are_safe(env: TestEnv) -> None:
    client = env.client("iago")
    for i, payload in enumerate(PAYLOADS[:20]):
        name = f"xss{i}"
        assert_success(
            await client.post(
                "/users/me/subscriptions",
                {"subscriptions": [{"name": name, "description": payload}]},
            )
        )
    streams: list[dict[str, Any]] = assert_success(await client.get("/streams"))["streams"]
    described = [s for s in streams if s["name"].startswith("xss")]
    assert len(described) == 20
    for stream in described:
        assert problems(stream["rendered_description"]) == [], stream


async def test_profile_field_values_are_safe(env: TestEnv) -> None:
    fields = {}
    for field_type, name in ((1, "Short"), (2, "Long")):
        created = await env.client("iago").post(
            "/realm/profile_fields", {"name": name, "field_type": field_type}
        )
        fields[field_type] = assert_success(created)["id"]
    client = env.client("hamlet")
    for payload in PAYLOADS[:20]:
        data = [{"id": fields[2], "value": f"**x** {payload}"}]
        if len(payload) <= 50:
            data.append({"id": fields[1], "value": payload})
        assert_success(await client.patch("/users/me/profile_data", {"data": data}))
        user = assert_success(
            await client.get(
                f"/users/{env.users['hamlet'].id}", {"include_custom_profile_fields": True}
            )
        )["user"]
        values = user["profile_data"]
        for entry in data:
            value = values[str(entry["id"])]
            assert value["value"] == entry["value"]
            assert problems(value["rendered_value"]) == [], (payload, value)


async def test_organization_description_is_safe(env: TestEnv) -> None:
    for payload in PAYLOADS[:20]:
        assert_success(await env.client("iago").patch("/realm", {"description": payload}))
        body = assert_success(await env.client().get("/server_settings"))
        assert problems(body["realm_description"]) == [], (payload, body)


def test_sanitizer_keeps_only_zulip_classes() -> None:
    assert sanitize_html('<span class="emoji spoof-button emoji-1f642">x</span>') == (
        '<span class="emoji emoji-1f642">x</span>'
    )
    assert sanitize_html('<div class="spoof">x</div>') == "<div>x</div>"
    assert sanitize_html('<p title="a" class="x">y</p>') == '<p title="a">y</p>'
