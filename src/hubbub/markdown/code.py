"""Code blocks highlighted by Pygments into Zulip's ``div.codehilite``."""

from __future__ import annotations

import functools
import re
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pygments.lexer import Lexer  # type: ignore[import-untyped,unused-ignore]

# Pygments is imported by the first code block, not at start-up: its modules would
# otherwise take part of an idle server's memory budget.

# A first line such as "#!python", "#!/usr/bin/python" or ":::python" names the language of
# a block that has none; the line itself stays part of the code.
_SHEBANG_RE = re.compile(
    r"(?:(?:^::+)|(?P<shebang>^[#]!))(?P<path>(?:/\w+)*[/ ])?(?P<lang>[\w#.+-]*)"
)

_WHITESPACE_SPAN_RE = re.compile(r'<span class="w">(\s*)</span>')
_TEXT_RE = re.compile(r"(?<=>)[^<]+")


@functools.cache
def _formatter() -> Any:
    from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped,unused-ignore]

    return HtmlFormatter(cssclass="codehilite", wrapcode=True)


def _lexer(lang: str) -> Lexer | None:
    from pygments.lexers import get_lexer_by_name  # type: ignore[import-untyped,unused-ignore]
    from pygments.util import ClassNotFound  # type: ignore[import-untyped,unused-ignore]

    try:
        # startinline lets the PHP family highlight snippets without a leading "<?php".
        return get_lexer_by_name(lang, startinline=True)
    except ClassNotFound:
        return None


def language_name(lang: str) -> str:
    """Pygments' canonical name for a language alias (``py2`` -> ``Python 2.x``)."""
    from pygments.lexers import find_lexer_class_by_name  # type: ignore[import-untyped,unused-ignore]
    from pygments.util import ClassNotFound  # type: ignore[import-untyped,unused-ignore]

    try:
        return str(find_lexer_class_by_name(lang).name)
    except ClassNotFound:
        return lang


def render_code_block(text: str, lang: str | None) -> str:
    """``<div class="codehilite" ...><pre><span></span><code>...</code></pre></div>``."""
    from pygments import highlight  # type: ignore[import-untyped,unused-ignore]
    from pygments.lexers import TextLexer  # type: ignore[import-untyped,unused-ignore]

    src = text.strip("\n")
    lexer: Lexer | None = None
    if lang:
        lexer = _lexer(lang)
    else:
        first_line = src.split("\n", 1)[0]
        match = _SHEBANG_RE.search(first_line)
        if match and match.group("lang"):
            lexer = _lexer(match.group("lang").lower())
    html = highlight(src, lexer or TextLexer(), _formatter()).rstrip("\n")
    # Whitespace is plain text in Zulip's output (older Pygments had no Whitespace tokens).
    html = _WHITESPACE_SPAN_RE.sub(r"\1", html)
    if not lang:
        # Untagged blocks keep Pygments' classic escaping of quotes in text.
        return _TEXT_RE.sub(lambda m: m.group(0).replace("'", "&#39;").replace('"', "&quot;"), html)
    # Zulip re-serialises tagged blocks, which leaves quotes in text unescaped.
    html = html.replace("&#39;", "'").replace("&quot;", '"')
    attr = escape(language_name(lang), quote=True)
    return html.replace(
        '<div class="codehilite">', f'<div class="codehilite" data-code-language="{attr}">', 1
    )
