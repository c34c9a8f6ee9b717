"""Which ``message`` events a narrowed event queue receives.

``POST /register`` checks a queue's narrow once (``queries.narrow.check_narrow``) and stores
it in the legacy form, ``[operator, operand]`` with a "-" prefix for a negated term and the
operator already in its canonical spelling. Matching reads that stored form directly, so
the bus needs no narrow parser and no import from the layers above it.
"""

from __future__ import annotations

from typing import Any

from hubbub.topic_names import RESOLVED_TOPIC_PREFIX

_MENTION_FLAGS = frozenset({"mentioned", "stream_wildcard_mentioned", "topic_wildcard_mentioned"})


def _term_matches(operator: str, operand: str, message: dict[str, Any], flags: list[str]) -> bool:
    operand = operand.lower()
    is_stream = message.get("type") == "stream"
    if operator == "stream":
        return is_stream and operand in (
            str(message.get("display_recipient", "")).lower(),
            str(message.get("stream_id")),
        )
    if operator == "topic":
        return is_stream and str(message.get("subject", "")).lower() == operand
    if operator == "sender":
        return operand in (str(message.get("sender_email", "")).lower(), str(message["sender_id"]))
    checks = {
        "dm": not is_stream,
        "private": not is_stream,
        "starred": "starred" in flags,
        "unread": "read" not in flags,
        "mentioned": bool(_MENTION_FLAGS.intersection(flags)),
        "alerted": "has_alert_word" in flags,
        "resolved": str(message.get("subject", "")).startswith(RESOLVED_TOPIC_PREFIX),
    }
    # Other "is" operands (muted, followed) need the database; like Zulip, they do not
    # filter a queue's events.
    return checks.get(operand, True)


def queue_narrow_matches(
    narrow: list[list[str]], message: dict[str, Any], flags: list[str]
) -> bool:
    """Whether a ``message`` event belongs in a queue registered with ``narrow``."""
    for stored_operator, operand in narrow:
        negated = stored_operator.startswith("-")
        operator = stored_operator.removeprefix("-")
        if _term_matches(operator, operand, message, flags) == negated:
            return False
    return True
