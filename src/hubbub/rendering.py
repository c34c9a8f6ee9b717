"""Rendering of user-written text to HTML, for callers outside the message pipeline.

Channel descriptions, the organization description and text profile field values are
Markdown, rendered as Zulip 10.2 renders them: by the message renderer, in the context of
the realm (its users, groups, channels, linkifiers and custom emoji) but with no message,
so without previews. The renderer's output passes the allow-list sanitizer, like message
HTML, so every HTML string the server produces goes through one wall.
"""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.markdown import RenderContext, RenderResult, render_markdown
from hubbub.models import User
from hubbub.queries.render_context import load_text_render_context

# Content shorter than this renders in well under a millisecond per hundred characters;
# longer content renders in a worker thread, so that the event loop keeps serving others
# (the interpreter switches threads every few milliseconds) while a long or hostile
# message is rendered.
_RENDER_INLINE_BELOW = 2000

# What Zulip 10.2 shows for an organization with no description.
DEFAULT_REALM_DESCRIPTION = "The coolest place in the universe."


def render_text(text: str, ctx: RenderContext) -> str:
    """``text``'s HTML under ``ctx`` (``load_text_render_context``'s); "" for no text."""
    return render_markdown(text, ctx).html


async def render_realm_text(
    conn: AsyncConnection,
    realm_id: int,
    text: str,
    *,
    realm_url: str = "",
    acting_user: User | None = None,
) -> str:
    """A description or profile value of the realm ``realm_id``, rendered to HTML; given
    its writer, ``acting_user``, channel links only to channels that user may read.

    The texts this renders are capped (a channel description at 1,024 characters, the
    organization's at 1,000, a profile value at 500), under the length that
    ``render_markdown_off_loop`` moves to a thread, so they render on the loop."""
    if not text:
        return ""
    ctx = await load_text_render_context(
        conn, realm_id, text, realm_url=realm_url, acting_user=acting_user
    )
    return render_text(text, ctx)


# The default description's HTML, without a render: a new organization's server answers
# ``/server_settings`` without building the renderer (tests check that the two agree).
DEFAULT_REALM_DESCRIPTION_HTML = "<p>The coolest place in the universe.</p>"


class RealmDescriptions:
    """The last rendering of each organization's description, by realm id, kept by a
    process's services. Like Zulip's cache of it, an entry lasts until the description
    (or the URL it was rendered for) changes, so a mention shows the name it had then."""

    def __init__(self) -> None:
        self._rendered: dict[int, tuple[str, str, str]] = {}

    async def render(
        self, conn: AsyncConnection, realm_id: int, description: str, *, realm_url: str = ""
    ) -> str:
        """The organization description's HTML, with Zulip's text for an empty one."""
        if not description:
            return DEFAULT_REALM_DESCRIPTION_HTML
        cached = self._rendered.get(realm_id)
        if cached is not None and cached[:2] == (description, realm_url):
            return cached[2]
        html = await render_realm_text(conn, realm_id, description, realm_url=realm_url)
        self._rendered[realm_id] = (description, realm_url, html)
        return html


async def render_markdown_off_loop(content: str, ctx: RenderContext) -> RenderResult:
    """``render_markdown``, in a worker thread when the content is long."""
    if len(content) < _RENDER_INLINE_BELOW:
        return render_markdown(content, ctx)
    return await asyncio.to_thread(render_markdown, content, ctx)
