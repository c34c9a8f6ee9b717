"""Rendering is bounded: content is cut at the message length limit, fences and formulas
have limits, the renderer's placeholder markers cannot come from user text, and the
inputs that used to rescan the rest of the text render with the expected result. (Times
are measured by bench/render_worst_case.py, not asserted here.)"""

from __future__ import annotations

import re

from hubbub.markdown import Linkifier, RenderContext, render_markdown
from hubbub.markdown.blocks import MAX_FENCE_DEPTH
from hubbub.markdown.render import MAX_RENDERED_LENGTH, TRUNCATED_SUFFIX, prepare_content

CTX = RenderContext(realm_url="http://zulip.testserver")


def test_content_past_the_limit_is_cut_as_a_send_cuts_it() -> None:
    content = "a" * (MAX_RENDERED_LENGTH * 3)
    prepared = prepare_content(content)
    assert len(prepared) == MAX_RENDERED_LENGTH
    assert prepared.endswith(TRUNCATED_SUFFIX)
    html = render_markdown(content, CTX).html
    assert html.endswith("<br>\n[message truncated]</p>")
    assert html.split("<br>")[0].count("a") == MAX_RENDERED_LENGTH - len(TRUNCATED_SUFFIX)


def test_content_at_the_limit_is_kept() -> None:
    content = "b" * MAX_RENDERED_LENGTH
    assert prepare_content(content) == content


def test_unclosed_brackets_stay_text() -> None:
    assert render_markdown("[" * 5000, CTX).html == "<p>" + "[" * 5000 + "</p>"
    assert render_markdown("[a](" * 1000, CTX).html == "<p>" + "[a](" * 1000 + "</p>"


def test_links_inside_bracket_runs_still_link() -> None:
    html = render_markdown("[[[a](https://x.example)", CTX).html
    assert html == '<p>[[<a href="https://x.example">a</a></p>'
    html = render_markdown("[" * 3000 + "[b](https://b.example)" + "]" * 10, CTX).html
    assert html == "<p>" + "[" * 3000 + '<a href="https://b.example">b</a>' + "]" * 10 + "</p>"


def test_nested_parentheses_in_a_link_destination() -> None:
    html = render_markdown("[w](https://w.example/a_(b)) ((", CTX).html
    assert html == '<p><a href="https://w.example/a_(b)">w</a> ((</p>'


def test_unclosed_timestamps_stay_text() -> None:
    text = "<time:" * 1500
    assert render_markdown(text, CTX).html == "<p>" + "&lt;time:" * 1500 + "</p>"
    html = render_markdown("<time:<time:2024-01-01T00:00:00Z>", CTX).html
    assert '<time datetime="2024-01-01T00:00:00Z">' not in html  # Zulip's lazy match
    assert "timestamp-error" in html


def test_quote_fences_nest_only_to_the_limit() -> None:
    depth = MAX_FENCE_DEPTH + 5
    content = "```quote\n" * depth + "deep"
    html = render_markdown(content, CTX).html
    assert html.count("<blockquote>") == MAX_FENCE_DEPTH
    assert html.count("```quote") == depth - MAX_FENCE_DEPTH


def test_formulas_past_the_budget_show_their_source() -> None:
    content = " ".join(f"$$x_{{{i}}}$$" for i in range(150))
    html = render_markdown(content, CTX).html
    assert html.count('<span class="katex">') == 100
    assert html.count('<span class="tex-error">') == 50


def test_repeated_formulas_count_too() -> None:
    html = render_markdown("```math\n" + "y^2\n\n" * 150 + "```\n$$y^2$$", CTX).html
    assert html.count('<span class="katex">') == 100
    assert html.count('<span class="tex-error">') == 51


def test_linkifiers_match_across_a_long_non_ascii_text() -> None:
    ctx = RenderContext(
        linkifiers=[Linkifier(id=1, pattern=r"#(?P<id>[0-9]+)", url_template="https://t/{id}")]
    )
    html = render_markdown("é #1 " * 500 + "ü #22", ctx).html
    assert html.count('<a href="https://t/1">#1</a>') == 500
    assert html.endswith('ü <a href="https://t/22">#22</a></p>')


# The stash's placeholders: \x02stash<N>\x03.


def test_out_of_range_placeholder_text_renders() -> None:
    for text in ("\x02stash0\x03", "\x02stash99\x03", "```\ncode\n```\n\x02stash7\x03"):
        html = render_markdown(text, CTX).html
        assert "\x02" not in html and "\x03" not in html
        assert "stash" in html


def test_valid_placeholder_text_cannot_pull_in_stashed_html() -> None:
    content = "```\ncode\n```\n[a](https://x.example/\x02stash0\x03) \x02stash0\x03"
    html = render_markdown(content, CTX).html
    assert html.count("codehilite") == 1
    assert '<a href="https://x.example/stash0">a</a> stash0' in html
    assert not re.search(r"href=\"[^\"]*<", html)
