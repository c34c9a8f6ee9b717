"""The empty topic ("general chat", feature level 334) and how each client sees it.

Since Zulip 10.0 a stream message may have the empty string as its topic. Clients that
know this announce the ``empty_topic_name`` capability (events, ``/register``) or pass
``allow_empty_topic_name`` (fetches); every other client is shown the realm's display
name for the empty topic instead, so that it never meets a topic it cannot render.

Zulip translates that display name into the realm's language in ``/register``; hubbub
has no translations, so the name is always the English one, which is also the name Zulip
itself puts into message objects for such clients.
"""

from __future__ import annotations

from typing import Any

from hubbub.text_checks import check_printable

# What clients without the capability see instead of the empty topic; also the name that
# a client may type to mean the empty topic (in a send, an edit or a narrow).
EMPTY_TOPIC_DISPLAY_NAME = "general chat"
# The pre-feature-level-334 spelling of "no topic": a send (feature level 370) or a typing
# notification (feature level 372) with it means the empty topic.
LEGACY_NO_TOPIC = "(no topic)"


def interpret_topic_name(topic: str) -> str:
    """A topic as a client typed it: the display name of the empty topic is the empty
    topic (Zulip's ``maybe_rename_general_chat_to_empty_topic``)."""
    return "" if topic == EMPTY_TOPIC_DISPLAY_NAME else topic


def check_topic_characters(topic: str) -> None:
    """Refuse a topic holding a control character (an escape sequence, a NUL), a lone
    surrogate or a noncharacter, as Zulip's ``check_stream_topic`` does, wherever a topic
    is stored or shown to others."""
    check_printable(topic, "topic")


def display_topic(topic: str, *, allow_empty: bool) -> str:
    """A stream message's topic as a client sees it."""
    if topic == "" and not allow_empty:
        return EMPTY_TOPIC_DISPLAY_NAME
    return topic


def message_for_client(item: dict[str, Any], *, allow_empty_topic_name: bool) -> dict[str, Any]:
    """A message object (``subject`` is its topic) as a client sees it: unchanged, or a
    copy with the display name when a stream message's topic is empty and the client did
    not ask for empty topics."""
    if allow_empty_topic_name or item.get("type") != "stream" or item.get("subject") != "":
        return item
    return {**item, "subject": EMPTY_TOPIC_DISPLAY_NAME}


# Zulip marks a resolved topic with this prefix.
RESOLVED_TOPIC_PREFIX = "✔ "


def is_resolve_or_unresolve(old_topic: str, new_topic: str) -> bool:
    """Whether a topic change only adds or removes the resolved mark."""
    mark = RESOLVED_TOPIC_PREFIX
    if new_topic.startswith(mark) and not old_topic.startswith(mark):
        return new_topic[len(mark) :] == old_topic
    if old_topic.startswith(mark) and not new_topic.startswith(mark):
        return old_topic[len(mark) :] == new_topic
    return False
