"""Why (if at all) a recipient of a new message gets a push notification.

This follows Zulip 8.0's ``UserMessageNotificationsData.get_push_notification_trigger``:
never the sender, a bot or someone who muted the sender; direct messages and personal
(or group) mentions when ``enable_offline_push_notifications`` is on; wildcard mentions
when the user (or the stream subscription) wants them and the stream/topic is not muted,
with the followed-topic variants (level 189 and later); messages in followed topics
(``enable_followed_topic_push_notifications``); and streams whose push setting is on.
Whether the user is online is decided at delivery (``enable_online_push_notifications``).
"""

from __future__ import annotations

from hubbub.queries.messages import (
    GROUP_MENTIONED,
    MENTIONED,
    STREAM_WILDCARD_MENTIONED,
    TOPIC_WILDCARD_MENTIONED,
)
from hubbub.queries.push import PushRecipient
from hubbub.queries.user_topics import VisibilityPolicy

# Stored in ``push_notification_queue.trigger`` (40 characters at most, so the
# followed-topic wildcard triggers use short names; ``zulip_trigger`` maps them back).
DIRECT_MESSAGE = "direct_message"
MENTION = "mentioned"
TOPIC_WILDCARD_FOLLOWED = "topic_wildcard_followed"
STREAM_WILDCARD_FOLLOWED = "stream_wildcard_followed"
TOPIC_WILDCARD = "topic_wildcard_mentioned"
STREAM_WILDCARD = "stream_wildcard_mentioned"
FOLLOWED_TOPIC = "followed_topic_push_notify"
STREAM_PUSH = "stream_push_notify"

_ZULIP_NAMES = {
    TOPIC_WILDCARD_FOLLOWED: "topic_wildcard_mentioned_in_followed_topic",
    STREAM_WILDCARD_FOLLOWED: "stream_wildcard_mentioned_in_followed_topic",
}


def zulip_trigger(stored: str) -> str:
    return _ZULIP_NAMES.get(stored, stored)


def _allows(r: PushRecipient, stream_setting: bool | None, global_setting: bool) -> bool:
    """Zulip's ``user_allows_notifications_in_StreamTopic``: topic policy, then the
    stream's own setting, then the user's global one."""
    if r.stream_is_muted and r.visibility_policy != VisibilityPolicy.UNMUTED:
        return False
    if r.visibility_policy == VisibilityPolicy.MUTED:
        return False
    if stream_setting is not None:
        return stream_setting
    return global_setting


def push_trigger(r: PushRecipient, flags: int, *, is_stream: bool) -> str | None:
    if r.is_bot or r.muted_sender:
        return None
    s = r.settings
    mention_ok = bool(s["enable_offline_push_notifications"])
    if not is_stream:
        return DIRECT_MESSAGE if mention_ok else None
    if mention_ok and flags & (MENTIONED | GROUP_MENTIONED):
        return MENTION
    followed = r.visibility_policy == VisibilityPolicy.FOLLOWED
    topic_wildcard = bool(flags & TOPIC_WILDCARD_MENTIONED)
    stream_wildcard = bool(flags & STREAM_WILDCARD_MENTIONED)
    followed_wildcards = followed and bool(s["enable_followed_topic_wildcard_mentions_notify"])
    wildcards = _allows(r, r.stream_wildcard_notify, bool(s["wildcard_mentions_notify"]))
    if mention_ok and followed_wildcards and topic_wildcard:
        return TOPIC_WILDCARD_FOLLOWED
    if mention_ok and followed_wildcards and stream_wildcard:
        return STREAM_WILDCARD_FOLLOWED
    if mention_ok and wildcards and topic_wildcard:
        return TOPIC_WILDCARD
    if mention_ok and wildcards and stream_wildcard:
        return STREAM_WILDCARD
    if followed and s["enable_followed_topic_push_notifications"]:
        return FOLLOWED_TOPIC
    if _allows(r, r.stream_push, bool(s["enable_stream_push_notifications"])):
        return STREAM_PUSH
    return None
