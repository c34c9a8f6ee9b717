"""The payloads Zulip's mobile apps expect, for APNs (iOS) and FCM (Android).

Shapes follow Zulip 8.0's ``get_message_payload_apns`` / ``get_message_payload_gcm``:
every payload carries ``server``, ``realm_id``, ``realm_uri``, ``realm_name`` (feature
level 234) and ``user_id`` so an app logged into several accounts can route it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hubbub.push.content import mobile_push_content, truncate_content


@dataclass(frozen=True)
class Recipient:
    """Who the notification is for, and the organization it comes from."""

    user_id: int
    realm_id: int
    realm_name: str
    realm_uri: str
    server: str


@dataclass(frozen=True)
class MessageFacts:
    id: int
    date_sent: float
    rendered_content: str
    sender_id: int
    sender_email: str
    sender_full_name: str
    sender_avatar_url: str
    # A stream message: its stream and topic; a direct message: None.
    stream_id: int | None = None
    stream_name: str | None = None
    topic: str | None = None
    # A group direct message: every member's id (sender included) and the others' names.
    group_user_ids: tuple[int, ...] = ()
    group_names: tuple[str, ...] = ()

    @property
    def is_group_dm(self) -> bool:
        return self.stream_id is None and bool(self.group_user_ids)


def base_payload(to: Recipient) -> dict[str, Any]:
    return {
        "server": to.server,
        "realm_id": to.realm_id,
        "realm_uri": to.realm_uri,
        "realm_name": to.realm_name,
        "user_id": to.user_id,
    }


def _message_common(to: Recipient, msg: MessageFacts) -> dict[str, Any]:
    data = base_payload(to)
    data["sender_id"] = msg.sender_id
    data["sender_email"] = msg.sender_email
    data["time"] = int(msg.date_sent)
    if msg.stream_id is not None:
        data["recipient_type"] = "stream"
        data["stream"] = msg.stream_name
        data["stream_id"] = msg.stream_id
        data["topic"] = msg.topic
    else:
        data["recipient_type"] = "private"
        if msg.is_group_dm:
            data["pm_users"] = ",".join(str(uid) for uid in sorted(msg.group_user_ids))
    return data


_WILDCARD_TRIGGERS = frozenset(
    {
        "topic_wildcard_mentioned_in_followed_topic",
        "stream_wildcard_mentioned_in_followed_topic",
        "topic_wildcard_mentioned",
        "stream_wildcard_mentioned",
    }
)


def _apns_title(msg: MessageFacts) -> str:
    if msg.is_group_dm:
        return ", ".join(sorted(msg.group_names))
    if msg.stream_id is not None:
        return f"#{msg.stream_name} > {msg.topic}"
    return msg.sender_full_name


def _apns_subtitle(msg: MessageFacts, trigger: str) -> str:
    if trigger == "mentioned":
        return f"{msg.sender_full_name} mentioned you:"
    if trigger in _WILDCARD_TRIGGERS:
        return f"{msg.sender_full_name} mentioned everyone:"
    if msg.stream_id is None and not msg.is_group_dm:
        return ""
    return msg.sender_full_name + ":"


def message_payload_apns(to: Recipient, msg: MessageFacts, trigger: str) -> dict[str, Any]:
    zulip = _message_common(to, msg)
    zulip["message_ids"] = [msg.id]
    body, _ = truncate_content(mobile_push_content(msg.rendered_content))
    return {
        "alert": {
            "title": _apns_title(msg),
            "subtitle": _apns_subtitle(msg, trigger),
            "body": body,
        },
        "sound": "default",
        # Zulip sends 0 until the apps handle a real count (see its get_apns_badge_count).
        "badge": 0,
        "custom": {"zulip": zulip},
    }


def message_payload_gcm(to: Recipient, msg: MessageFacts) -> tuple[dict[str, Any], dict[str, Any]]:
    data = _message_common(to, msg)
    content, truncated = truncate_content(mobile_push_content(msg.rendered_content))
    data.update(
        event="message",
        zulip_message_id=msg.id,  # "message_id" is reserved by FCM
        content=content,
        content_truncated=truncated,
        sender_full_name=msg.sender_full_name,
        sender_avatar_url=msg.sender_avatar_url,
    )
    return data, {"priority": "high"}
