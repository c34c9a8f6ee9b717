"""``!avatar(email)`` and ``!gravatar(email)`` render as Zulip 10.2 renders them
(``markdown/avatars.py``)."""

from __future__ import annotations

import pytest

from hubbub.markdown import MentionableUser, RenderContext, render_markdown
from hubbub.markdown.avatars import possible_avatar_emails


def _img(alt: str, src: str) -> str:
    return f'<img alt="{alt}" class="message_body_gravatar" src="{src}" title="{alt}">'


CTX = RenderContext(
    realm_url="https://chat.example.com",
    users=[
        MentionableUser(15, "King Hamlet", "hamlet@example.com"),
        MentionableUser(16, "Old Bot", "bot@example.com", is_active=False),
        # A user whose address is hidden is known by the API email only.
        MentionableUser(17, "Hidden", "user17@hubbub.invalid"),
    ],
)

CASES = [
    # Zulip's own cases (web/tests/markdown.test.cjs): an address nobody here has.
    (
        "This is an !avatar(cordelia@zulip.com) of Cordelia Lear",
        "<p>This is an "
        + _img("cordelia@zulip.com", "/avatar/cordelia@zulip.com?s=30")
        + " of Cordelia Lear</p>",
    ),
    (
        "This is a !gravatar(cordelia@zulip.com) of Cordelia Lear",
        "<p>This is a "
        + _img("cordelia@zulip.com", "/avatar/cordelia@zulip.com?s=30")
        + " of Cordelia Lear</p>",
    ),
    # A user's address names the user by id; stripped and lowercased first.
    ("!avatar(hamlet@example.com)", "<p>" + _img("hamlet@example.com", "/avatar/15?s=30") + "</p>"),
    (
        "!gravatar( Hamlet@Example.COM )",
        "<p>" + _img("hamlet@example.com", "/avatar/15?s=30") + "</p>",
    ),
    # Deactivated users and bots are users too.
    ("!avatar(bot@example.com)", "<p>" + _img("bot@example.com", "/avatar/16?s=30") + "</p>"),
    (
        "!avatar(user17@hubbub.invalid)",
        "<p>" + _img("user17@hubbub.invalid", "/avatar/17?s=30") + "</p>",
    ),
    # Inside other syntax, and twice in a line.
    (
        "**!avatar(hamlet@example.com)** and !avatar(x@y.z)",
        "<p><strong>"
        + _img("hamlet@example.com", "/avatar/15?s=30")
        + "</strong> and "
        + _img("x@y.z", "/avatar/x@y.z?s=30")
        + "</p>",
    ),
    ("no!avatar(a@b.c)space", "<p>no" + _img("a@b.c", "/avatar/a@b.c?s=30") + "space</p>"),
    # Not in code.
    ("`!avatar(a@b.c)`", "<p><code>!avatar(a@b.c)</code></p>"),
    (
        "    !avatar(a@b.c)",
        '<div class="codehilite"><pre><span></span><code>!avatar(a@b.c)\n</code></pre></div>',
    ),
    # Not the syntax (an address would be linked as one: these are none).
    ("!avatar(hamlet", "<p>!avatar(hamlet</p>"),
    ("!Avatar(hamlet)", "<p>!Avatar(hamlet)</p>"),
    ("! avatar(hamlet)", "<p>! avatar(hamlet)</p>"),
    # Empty: Zulip renders it as it stands.
    ("!avatar()", "<p>" + _img("", "/avatar/?s=30") + "</p>"),
]


@pytest.mark.parametrize(("source", "html"), CASES)
def test_render(source: str, html: str) -> None:
    assert render_markdown(source, CTX).html == html


def test_the_address_is_escaped() -> None:
    """Markup in the address stays text in the attributes, and the URL names one path."""
    html = render_markdown('!avatar(a"><script>x</script>&?#/b)', CTX).html
    shown = "a&quot;&gt;&lt;script&gt;x&lt;/script&gt;&amp;?#/b"
    src = "/avatar/a%22%3E%3Cscript%3Ex%3C%2Fscript%3E%26%3F%23%2Fb?s=30"
    assert html == f"<p>{_img(shown, src)}</p>"
    assert "<script>" not in html


def test_possible_avatar_emails() -> None:
    content = "!avatar(Foo@Example.com) !gravatar( bar@yo.tv ) !avatar() `!avatar(c@d.e)`"
    # Code is not excluded: the set only says whose users to load.
    assert possible_avatar_emails(content) == {"foo@example.com", "bar@yo.tv", "c@d.e"}
