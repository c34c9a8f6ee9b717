"""Events as a client without the ``empty_topic_name`` capability sees them.

Such a client (any that registered without it, feature level 334) is never sent the
empty topic of a stream message: each field that names one carries the empty topic's
display name instead. The fields are the ones Zulip lists: ``message``'s ``subject``,
``delete_message``'s ``topic``, ``update_message``'s ``orig_subject`` and ``subject``,
``user_topic``'s ``topic_name``, ``typing``'s ``topic``, and the ``topic`` of
``message_details`` in an ``update_message_flags`` event that removes ``read``; and, so
that no field is left out, the ``topic`` of a ``typing_edit_message`` event's channel
``recipient`` (feature level 351).
"""

from __future__ import annotations

from typing import Any

from hubbub.topic_names import EMPTY_TOPIC_DISPLAY_NAME


def _renamed(item: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    if not any(item.get(key) == "" for key in keys):
        return item
    return {**item, **{key: EMPTY_TOPIC_DISPLAY_NAME for key in keys if item.get(key) == ""}}


def _message_details(event: dict[str, Any]) -> dict[str, Any]:
    details = event.get("message_details")
    if event.get("op") != "remove" or event.get("flag") != "read" or not details:
        return event
    renamed = {
        key: _renamed(item, ("topic",)) if item.get("type") == "stream" else item
        for key, item in details.items()
    }
    if all(renamed[key] is details[key] for key in details):
        return event
    return {**event, "message_details": renamed}


def without_empty_topics(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` as a client without the capability sees it: itself when it names no
    empty topic, else a copy (the original is shared with other queues)."""
    kind = event["type"]
    if kind == "message":
        shown = event["message"]
        if shown.get("type") == "stream" and shown.get("subject") == "":
            return {**event, "message": {**shown, "subject": EMPTY_TOPIC_DISPLAY_NAME}}
        return event
    if kind in ("delete_message", "typing"):
        return _renamed(event, ("topic",)) if event.get("message_type") == "stream" else event
    if kind == "update_message":
        # Only a stream message's edit names a topic (its stream is always given).
        return _renamed(event, ("orig_subject", "subject")) if "stream_id" in event else event
    if kind == "user_topic":
        return _renamed(event, ("topic_name",))
    if kind == "update_message_flags":
        return _message_details(event)
    if kind == "typing_edit_message":
        shown = event["recipient"]
        if shown.get("type") == "channel" and shown.get("topic") == "":
            return {**event, "recipient": {**shown, "topic": EMPTY_TOPIC_DISPLAY_NAME}}
        return event
    return event
