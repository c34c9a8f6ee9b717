"""The markdown-it engine as ``render.py`` builds it, set up through markdown-it's public
rule API only."""

from __future__ import annotations

from hubbub.markdown import inline
from hubbub.markdown.context import RenderContext
from hubbub.markdown.render import _engine, render_markdown


def test_the_inline_chain_is_zulips_rules_alone_in_their_order() -> None:
    ruler = _engine().inline.ruler
    names = [name for name, _ in inline.RULES]
    assert ruler.get_active_rules() == names
    # markdown-it's own inline rules stay registered but disabled, so none of them runs.
    assert {"text", "emphasis", "link", "escape"} <= set(ruler.get_all_rules()) - set(names)
    assert ruler.getRules("") == [rule for _, rule in inline.RULES]


def test_markdown_its_own_inline_syntax_is_not_applied() -> None:
    """A backslash escape and underscore emphasis are CommonMark's, not Zulip's."""
    html = render_markdown(r"\*a\* _b_ <i>c</i>", RenderContext(realm_url="http://x")).html
    assert html == r"<p>\<em>a\</em> _b_ &lt;i&gt;c&lt;/i&gt;</p>"
