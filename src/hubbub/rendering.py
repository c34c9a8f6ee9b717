"""Rendering of user-written text to HTML, for callers outside the message pipeline.

Plain text (descriptions, profile fields) is escaped and split into paragraphs (the
``<p>…</p>`` shape clients get for plain text), then passes the same allow-list sanitizer
as message HTML, so that every HTML string the server produces goes through one wall.
"""

from __future__ import annotations

import asyncio
import html

from hubbub.markdown import RenderContext, RenderResult, render_markdown
from hubbub.markdown.sanitize import sanitize_html

# Content shorter than this renders in well under a millisecond per hundred characters;
# longer content renders in a worker thread, so that the event loop keeps serving others
# (the interpreter switches threads every few milliseconds) while a long or hostile
# message is rendered.
_RENDER_INLINE_BELOW = 2000


def render_text(text: str) -> str:
    # The renderer's placeholder delimiters and NUL never reach the output.
    text = text.replace("\x00", "").replace("\x02", "").replace("\x03", "")
    paragraphs = [p for p in text.replace("\r\n", "\n").split("\n\n") if p.strip()]
    return sanitize_html(
        "".join(
            "<p>" + html.escape(p.strip(), quote=False).replace("\n", "<br>\n") + "</p>"
            for p in paragraphs
        )
    )


async def render_markdown_off_loop(content: str, ctx: RenderContext) -> RenderResult:
    """``render_markdown``, in a worker thread when the content is long."""
    if len(content) < _RENDER_INLINE_BELOW:
        return render_markdown(content, ctx)
    return await asyncio.to_thread(render_markdown, content, ctx)
