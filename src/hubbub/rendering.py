"""Rendering of user-written text to HTML.

Until the Markdown renderer lands (the messages issue), text is escaped and split into
paragraphs: safe to show, and the same shape (``<p>…</p>``) clients get for plain text.
"""

from __future__ import annotations

import html


def render_text(text: str) -> str:
    paragraphs = [p for p in text.replace("\r\n", "\n").split("\n\n") if p.strip()]
    return "".join(
        "<p>" + html.escape(p.strip(), quote=False).replace("\n", "<br>\n") + "</p>"
        for p in paragraphs
    )
