"""Links to channels, topics and messages, as Zulip 10.2 renders them.

``#**channel**`` links the channel, ``#**channel>topic**`` a topic of it (the empty topic
too, since feature level 346) and ``#**channel>topic@123**`` one message in a topic
(feature level 319). A name links only when the render context lists the channel, which
the caller restricts to the channels the writer may read; anything else stays text.

The URLs use the ``channel`` operator and Zulip's fragment encoding of names. A topic link
names a message of the topic with ``/with/`` when the context has one (feature level 347),
so that the link follows the topic when it is renamed or moved.
"""

from __future__ import annotations

import re
from html import escape
from urllib.parse import quote

from markdown_it.rules_inline import StateInline

from hubbub.markdown.context import LinkableStream, RenderContext
from hubbub.markdown.mentions import BEFORE_MENTION
from hubbub.markdown.state import ctx_of, push_html

_MESSAGE = r"#\*\*(?P<channel>[^\*>]+)>(?P<topic>[^\*]*)@(?P<message_id>\d+)\*\*"
_TOPIC = r"#\*\*(?P<channel>[^\*>]+)>(?P<topic>[^\*]*)\*\*"
_CHANNEL = r"#\*\*(?P<channel>[^\*]+)\*\*"
MESSAGE_LINK_RE = re.compile(BEFORE_MENTION + _MESSAGE)
TOPIC_LINK_RE = re.compile(BEFORE_MENTION + _TOPIC)
CHANNEL_LINK_RE = re.compile(BEFORE_MENTION + _CHANNEL)
# Without the look-behind, tried at every "#**" of a whole message: a superset of the
# names the rules look up (``channel_link_targets``). The topic pattern also covers the
# channel part of a message link.
_TOPIC_ANYWHERE_RE = re.compile(_TOPIC)
_CHANNEL_ANYWHERE_RE = re.compile(_CHANNEL)

# How a link shows the empty topic: the English display name, in <em>, as Zulip writes
# it into the HTML (hubbub.topic_names has the same name for clients).
EMPTY_TOPIC_LINK_TEXT = "general chat"


def channel_link_targets(content: str) -> tuple[set[str], set[tuple[str, str]]]:
    """The channel names and (channel, topic) pairs the links of ``content`` can name:
    a superset (links in code spans count too), for loading only those channels and
    looking up only those topics."""
    names: set[str] = set()
    topics: set[tuple[str, str]] = set()
    at = content.find("#**")
    while at != -1:
        m = _TOPIC_ANYWHERE_RE.match(content, at)
        if m is not None:
            names.add(m.group("channel"))
            topics.add((m.group("channel"), m.group("topic")))
        m = _CHANNEL_ANYWHERE_RE.match(content, at)
        if m is not None:
            names.add(m.group("channel"))
        at = content.find("#**", at + 1)
    return names, topics


def hash_encode(text: str) -> str:
    """Zulip's URL-fragment encoding of channel and topic names: percent-encoding with
    nothing kept safe, "." escaped, then "%" written as "."."""
    return quote(text, safe="").replace(".", "%2E").replace("%", ".")


def channel_slug(channel_id: int, name: str) -> str:
    return f"{channel_id}-{hash_encode(name.replace(' ', '-'))}"


def channel_narrow_url(channel_id: int, name: str) -> str:
    return f"/#narrow/channel/{channel_slug(channel_id, name)}"


def topic_narrow_url(channel_id: int, name: str, topic: str) -> str:
    return f"{channel_narrow_url(channel_id, name)}/topic/{hash_encode(topic)}"


def _topic_text(channel: LinkableStream, topic: str) -> str:
    shown = f"<em>{EMPTY_TOPIC_LINK_TEXT}</em>" if topic == "" else escape(topic, quote=False)
    return f"{escape('#' + channel.name, quote=False)} &gt; {shown}"


def _message_link(channel: LinkableStream, m: re.Match[str]) -> str:
    href = f"{topic_narrow_url(channel.id, channel.name, m.group('topic'))}/near/"
    href += m.group("message_id")
    text = _topic_text(channel, m.group("topic"))
    return f'<a class="message-link" href="{escape(href)}">{text} @ 💬</a>'


def _topic_link(ctx: RenderContext, channel: LinkableStream, m: re.Match[str]) -> str:
    topic = m.group("topic")
    href = topic_narrow_url(channel.id, channel.name, topic)
    with_id = ctx.topic_link_message_id(channel.name, topic)
    if with_id is not None:
        href += f"/with/{with_id}"
    return (
        f'<a class="stream-topic" data-stream-id="{channel.id}" href="{escape(href)}">'
        f"{_topic_text(channel, topic)}</a>"
    )


def _channel_link(channel: LinkableStream) -> str:
    href = channel_narrow_url(channel.id, channel.name)
    return (
        f'<a class="stream" data-stream-id="{channel.id}" href="{escape(href)}">'
        f"{escape('#' + channel.name, quote=False)}</a>"
    )


def channel_link(state: StateInline, silent: bool) -> bool:
    """The three link syntaxes, tried in Zulip's priority order: a message link, then a
    topic link, then a channel link; each only when its channel is in the context."""
    if not state.src.startswith("#**", state.pos):
        return False
    ctx = ctx_of(state)
    for pattern in (MESSAGE_LINK_RE, TOPIC_LINK_RE, CHANNEL_LINK_RE):
        m = pattern.match(state.src, state.pos, state.posMax)
        if m is None:
            continue
        channel = ctx.stream_by_name(m.group("channel"))
        if channel is None:
            continue
        if not silent:
            if pattern is MESSAGE_LINK_RE:
                html = _message_link(channel, m)
            elif pattern is TOPIC_LINK_RE:
                html = _topic_link(ctx, channel, m)
            else:
                html = _channel_link(channel)
            push_html(state, html)
        state.pos = m.end()
        return True
    return False
