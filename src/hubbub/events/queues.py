"""Event queues: what a client registered for, and which events it should receive."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

import orjson

from hubbub.events.empty_topic import without_empty_topics
from hubbub.events.queue_narrow import queue_narrow_matches

# Zulip keeps an idle queue for 10 minutes, and at most a week when asked for longer.
DEFAULT_QUEUE_LIFESPAN_SECONDS = 600
MAX_QUEUE_LIFESPAN_SECONDS = 7 * 24 * 3600
# How many queues one user may hold (every tab, device and bot process has one); a new
# registration beyond that removes the user's least recently used queue. Zulip has no
# such bound, only its lifespans.
DEFAULT_MAX_QUEUES_PER_USER = 20
# What a queue may hold, as the JSON of its events not yet acknowledged: a queue whose
# client stopped collecting passes it only after a long while, and is then removed (its
# client, if it comes back, gets BAD_EVENT_QUEUE_ID and registers again).
DEFAULT_MAX_QUEUE_BYTES = 4 * 1024 * 1024
# Zulip ends a quiet long-poll with a heartbeat after 45-55 s (jittered so that many
# clients do not reconnect in lockstep); clients give up on a poll after 90 s.
HEARTBEAT_MIN_SECONDS = 45.0
HEARTBEAT_JITTER_SECONDS = 10.0
LONGPOLL_TIMEOUT_SECONDS = 90
# A queue trusts the credentials that last proved who polls it for this long; then the
# next poll asks the database again. Changes made through this server (a new API key,
# deactivation) take effect at once (``forget_credentials``); this bounds the delay for a
# change the server is not told of: a command run against the same SQLite file.
CREDENTIAL_RECHECK_SECONDS = 60.0


@dataclass
class QueueSpec:
    """One client's registration (``POST /register``); immutable after creation."""

    queue_id: str
    user_id: int
    realm_id: int
    # None: every event type.
    event_types: list[str] | None
    narrow: list[list[str]] = field(default_factory=list)
    apply_markdown: bool = False
    client_gravatar: bool = True
    slim_presence: bool = False
    all_public_streams: bool = False
    include_subscribers: bool = False
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    lifespan_seconds: int = DEFAULT_QUEUE_LIFESPAN_SECONDS
    client_name: str = ""

    def wants(self, event_type: str) -> bool:
        return (
            event_type == "heartbeat"
            or self.event_types is None
            or (event_type in self.event_types)
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @cached_property
    def shaping(self) -> tuple[Any, ...]:
        """Everything of this spec that ``shape_event`` reads, but the queue's own id
        (``ShapedOnce`` adds that): two queues with equal values shape every event alike.
        Computed once (a spec does not change); not a field, so never saved."""
        return (
            None if self.event_types is None else tuple(self.event_types),
            repr(self.narrow),
            self.apply_markdown,
            self.client_gravatar,
            self.slim_presence,
            tuple(sorted(self.client_capabilities.items())),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QueueSpec:
        return cls(**data)


def queues_to_evict(owned: list[tuple[str, bool, float]], limit: int) -> list[str]:
    """Which of a user's queues go so that a new one fits under ``limit``: ``owned`` is
    (queue id, idle, last access) of each; queues without a waiting poll go first, the
    least recently used of them first."""
    excess = len(owned) - limit + 1
    if excess <= 0:
        return []
    ordered = sorted(owned, key=lambda item: (not item[1], item[2]))
    return [queue_id for queue_id, _, _ in ordered[:excess]]


def heartbeat_delay(
    minimum: float = HEARTBEAT_MIN_SECONDS, jitter: float = HEARTBEAT_JITTER_SECONDS
) -> float:
    return minimum + random.uniform(0, jitter)


# A person whose avatar a client can compute itself carries this private mark in a notice;
# each queue then gets either null (client_gravatar) or the URL. Never sent to clients.
GRAVATAR_MARK = "_hubbub_gravatar"
# A ``message`` event carries the rendered message plus this private mark (raw content,
# whether the avatar is a Gravatar, the sending queue and its local id); see below.
MESSAGE_MARK = "_hubbub_message"
# A ``delete_message`` event is published in two forms, marked "bulk" (``message_ids``) or
# "single" (one event per message, ``message_id``); each queue keeps one form, by its
# ``bulk_message_deletion`` capability, as Zulip's per-queue expansion does.
DELETE_FORM_MARK = "_hubbub_delete_form"
# An event in two forms, by a client capability: ``[capability, with_it]`` goes only to
# queues whose capability is ``with_it`` (a user group's deactivation, feature level 294).
CAPABILITY_FORM_MARK = "_hubbub_capability_form"

# Events that repeat a ``user_settings`` update for clients older than feature level 89;
# clients that announce the ``user_settings_object`` capability do not get them.
LEGACY_SETTINGS_EVENTS = frozenset({"update_display_settings", "update_global_notifications"})


def shape_event(event: dict[str, Any], spec: QueueSpec) -> dict[str, Any] | None:
    """The event as this queue should see it, or None when the queue does not want it.

    Every bus calls this, so per-queue options (``client_gravatar`` here; ``apply_markdown``
    and ``slim_presence`` for later event types) shape events the same way everywhere.
    A client without the ``empty_topic_name`` capability (feature level 334) is shown the
    empty topic's display name, after the queue's narrow has matched the stored topic.
    """
    shaped = _shape_event(event, spec)
    if shaped is None or spec.client_capabilities.get("empty_topic_name"):
        return shaped
    return without_empty_topics(shaped)


def _shape_event(event: dict[str, Any], spec: QueueSpec) -> dict[str, Any] | None:
    if not spec.wants(event["type"]):
        return None
    if event["type"] in LEGACY_SETTINGS_EVENTS and spec.client_capabilities.get(
        "user_settings_object"
    ):
        return None
    if event["type"] == "realm_linkifiers" and not spec.client_capabilities.get(
        "linkifier_url_template"
    ):
        # URL templates (feature level 176) are not for clients without the capability.
        return None
    if CAPABILITY_FORM_MARK in event:
        capability, with_it = event[CAPABILITY_FORM_MARK]
        if bool(spec.client_capabilities.get(capability)) != with_it:
            return None
        return {k: v for k, v in event.items() if k != CAPABILITY_FORM_MARK}
    if DELETE_FORM_MARK in event:
        bulk = bool(spec.client_capabilities.get("bulk_message_deletion"))
        if (event[DELETE_FORM_MARK] == "bulk") != bulk:
            return None
        return {k: v for k, v in event.items() if k != DELETE_FORM_MARK}
    if event["type"] == "presence":
        # Slim clients identify people by id, old ones by email; each gets one key.
        drop = "email" if spec.slim_presence else "user_id"
        return {k: v for k, v in event.items() if k != drop}
    if (
        event["type"] == "typing"
        and event.get("message_type") == "stream"
        and not spec.client_capabilities.get("stream_typing_notifications")
    ):
        # Stream typing notifications only for clients that can show them (level 58).
        return None
    # A queue registered with a narrow gets only the messages that match it.
    if (
        event["type"] == "message"
        and spec.narrow
        and not queue_narrow_matches(spec.narrow, event["message"], event.get("flags", []))
    ):
        return None
    if MESSAGE_MARK in event:
        # Per-queue message shaping: apply_markdown picks rendered HTML or raw Markdown,
        # client_gravatar nulls a Gravatar URL, and only the queue that sent the message
        # (queue_id on POST /messages) gets its local_message_id.
        mark = event[MESSAGE_MARK]
        event = {k: v for k, v in event.items() if k != MESSAGE_MARK}
        msg = dict(event["message"])
        if not spec.apply_markdown:
            msg["content"] = mark["raw_content"]
            msg["content_type"] = "text/x-markdown"
        if spec.client_gravatar and mark["gravatar"]:
            msg["avatar_url"] = None
        event["message"] = msg
        if (
            mark["queue_id"] == spec.queue_id
            and mark["sender_id"] == spec.user_id
            and mark["local_id"] is not None
        ):
            event["local_message_id"] = mark["local_id"]
        return event
    person = event.get("person")
    if isinstance(person, dict) and GRAVATAR_MARK in person:
        person = {k: v for k, v in person.items() if k != GRAVATAR_MARK}
        if spec.client_gravatar and event["person"][GRAVATAR_MARK]:
            person["avatar_url"] = None
        event = {**event, "person": person}
    return event


class ShapedOnce:
    """``shape_event`` for one notice's many queues, each distinct shape made once.

    A message to 1,000 subscribers used to be shaped (two dictionary copies) 1,000
    times, and on the Redis bus also serialized 1,000 times; their queues mostly share a
    handful of registrations (``QueueSpec.shaping``). Only the sending queue's message
    differs (its ``local_message_id``), so the key also says whether the queue is that one.
    """

    def __init__(self, event: dict[str, Any]) -> None:
        self.event = event
        mark = event.get(MESSAGE_MARK)
        self._sender_queue: tuple[str, int] | None = (
            (mark["queue_id"], mark["sender_id"])
            if mark is not None and mark["local_id"] is not None
            else None
        )
        self._shapes: dict[tuple[Any, ...], dict[str, Any] | None] = {}
        self._json: dict[tuple[Any, ...], str | None] = {}

    def _key(self, spec: QueueSpec) -> tuple[Any, ...]:
        return (spec.shaping, self._sender_queue == (spec.queue_id, spec.user_id))

    def shape(self, spec: QueueSpec) -> dict[str, Any] | None:
        key = self._key(spec)
        if key not in self._shapes:
            self._shapes[key] = shape_event(self.event, spec)
        return self._shapes[key]

    def json(self, spec: QueueSpec) -> str | None:
        """``shape``'s result as JSON (the Redis bus stores events so), also made once."""
        key = self._key(spec)
        if key not in self._json:
            shaped = self.shape(spec)
            self._json[key] = None if shaped is None else orjson.dumps(shaped).decode()
        return self._json[key]
