"""Zulip-flavoured Markdown: message content to the HTML that Zulip 10.2 clients expect.

Pure and database-free: the caller loads a :class:`RenderContext` and calls
:func:`render_markdown`; :func:`topic_links` linkifies a topic name.
"""

from hubbub.markdown.context import (
    LinkableStream,
    Linkifier,
    MentionableGroup,
    MentionableUser,
    RealmEmoji,
    RenderContext,
    RenderResult,
)
from hubbub.markdown.linkifiers import topic_links
from hubbub.markdown.render import find_alert_words, render_markdown

__all__ = [
    "LinkableStream",
    "Linkifier",
    "MentionableGroup",
    "MentionableUser",
    "RealmEmoji",
    "RenderContext",
    "RenderResult",
    "find_alert_words",
    "render_markdown",
    "topic_links",
]
