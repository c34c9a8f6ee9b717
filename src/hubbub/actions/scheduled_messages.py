"""Scheduling, editing and deleting messages to be sent later (``/scheduled_messages``).

Behaviour follows Zulip 8.0 (feature levels 173, 179, 181, 184, 236):
- scheduling runs the checks of sending (topic, content, stream access and posting
  policy, recipients, direct-message policy, wildcard mentions) and stores the normalized
  content with its rendering; the message is checked again when it is delivered;
- ``read_by_sender`` defaults to whether the client is one a person types in, except that
  a note to self starts unread (Zulip's rule for scheduled messages);
- an edit takes any subset of type / to / topic / content / time; changing ``type`` needs
  ``to`` (and ``topic`` for a stream); a topic alone is ignored for a direct message; an
  edit of a failed message needs a new time and re-arms it; a delivered one is refused;
- the sender's queues get ``scheduled_messages`` add / update / remove events.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
import sqlalchemy as sa

from hubbub.actions.attachments import do_update_scheduled_message_attachments
from hubbub.actions.direct_message_permissions import check_direct_message_permission
from hubbub.actions.message_recipients import resolve_direct_recipients
from hubbub.actions.send_message import (
    access_stream_for_send,
    check_wildcard_mentions,
    default_read_by_sender,
    normalize_content,
    normalize_topic,
)
from hubbub.db.tables import scheduled_message
from hubbub.errors import JsonableError
from hubbub.json_values import load_json
from hubbub.models import Realm, User
from hubbub.queries.render_context import load_render_context
from hubbub.queries.scheduled_messages import access_scheduled_message, scheduled_message_dict
from hubbub.rendering import render_markdown_off_loop
from hubbub.transaction import Tx

NOT_IN_FUTURE = "Scheduled delivery time must be in the future."

# Zulip's recipient types of the scheduled-message API ("direct" is feature level 174's
# name for "private"); "channel" is accepted as /messages accepts it (Zulip 9.0's name).
_TYPES = {"stream": "stream", "channel": "stream", "direct": "private", "private": "private"}


def check_scheduled_type(value: str) -> str:
    """The stored type ("stream" or "private") of a ``type`` parameter."""
    kind = _TYPES.get(value)
    if kind is None:
        raise JsonableError("Invalid type")
    return kind


def check_delivery_time(timestamp: int, now: float) -> None:
    if timestamp <= now:
        raise JsonableError(NOT_IN_FUTURE)


def parse_scheduled_to(kind: str, raw: str) -> int | list[int]:
    """``to``: a stream id, or a JSON list of user ids (Zulip 8.0's wording)."""
    if kind == "stream":
        try:
            return int(raw)
        except ValueError:
            raise JsonableError("Invalid data type for stream ID") from None
    try:
        value = load_json("to", raw)
    except orjson.JSONDecodeError:
        value = raw
    if not isinstance(value, list):
        raise JsonableError("Invalid data type for recipients")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise JsonableError("Recipient list may only contain user IDs")
    return sorted(set(value))


@dataclass(frozen=True)
class CheckedScheduledMessage:
    """What a scheduled message's row holds about its addressing and content."""

    kind: str  # "stream" or "private"
    stream_id: int | None
    # A direct message's audience as the API shows it: the other participants, or the
    # sender alone for a note to self.
    to_user_ids: list[int] | None
    topic: str
    content: str
    rendered_content: str
    # A direct message to no one but the sender.
    to_self: bool = False

    def values(self) -> dict[str, Any]:
        return {
            "message_type": self.kind,
            "stream_id": self.stream_id,
            "to_user_ids": None
            if self.to_user_ids is None
            else orjson.dumps(self.to_user_ids).decode(),
            "topic": self.topic,
            "content": self.content,
            "rendered_content": self.rendered_content,
        }


async def check_scheduled_message(
    tx: Tx,
    realm: Realm,
    sender: User,
    *,
    kind: str,
    to: int | list[int],
    topic: str | None,
    content: str,
    realm_url: str,
) -> CheckedScheduledMessage:
    """Sending's checks, in Zulip's order (addressing, then content, then permissions)."""
    if kind == "stream":
        assert isinstance(to, int)
        topic = normalize_topic(realm, topic)
        content = normalize_content(content)
        send_target = await access_stream_for_send(tx, sender, to)
        target, subscribers = send_target.stream, send_target.subscribers
        recipient_id = await send_target.recipient_id(tx)
        ctx = await load_render_context(
            tx.conn, realm, sender, realm_url=realm_url, content=content
        )
        rendered = await render_markdown_off_loop(content, ctx)
        await check_wildcard_mentions(
            tx, realm, sender, rendered, recipient_id, topic, len(subscribers)
        )
        return CheckedScheduledMessage("stream", target.id, None, topic, content, rendered.html)
    assert isinstance(to, list)
    people = await resolve_direct_recipients(tx.conn, sender, to)
    content = normalize_content(content)
    await check_direct_message_permission(tx.conn, realm, sender, people)
    others = sorted({u.id for u in people} - {sender.id})
    ctx = await load_render_context(tx.conn, realm, sender, realm_url=realm_url, content=content)
    rendered = await render_markdown_off_loop(content, ctx)
    return CheckedScheduledMessage(
        "private", None, others or [sender.id], "", content, rendered.html, to_self=not others
    )


# Callbacks of this process's delivery loops, called after a commit that schedules a
# message (or moves one) so that a loop asleep until a later time wakes for it. Actions
# sit below the workers, so the loop registers itself here rather than being imported.
_wakers: set[Callable[[float], None]] = set()


def add_delivery_waker(waker: Callable[[float], None]) -> None:
    _wakers.add(waker)


def remove_delivery_waker(waker: Callable[[float], None]) -> None:
    _wakers.discard(waker)


def _wake_delivery_after_commit(tx: Tx, due: float) -> None:
    async def wake() -> None:
        for waker in list(_wakers):
            waker(due)

    tx.on_commit(wake)


def notify_scheduled_message_update(tx: Tx, sender: User, row: Any) -> None:
    event = {
        "type": "scheduled_messages",
        "op": "update",
        "scheduled_message": scheduled_message_dict(row),
    }
    tx.notify(sender.realm_id, event, [sender.id])


def notify_scheduled_message_remove(tx: Tx, sender: User, scheduled_message_id: int) -> None:
    event = {
        "type": "scheduled_messages",
        "op": "remove",
        "scheduled_message_id": scheduled_message_id,
    }
    tx.notify(sender.realm_id, event, [sender.id])


async def do_schedule_message(
    tx: Tx,
    sender: User,
    checked: CheckedScheduledMessage,
    *,
    deliver_at: int,
    client_name: str,
    read_by_sender: bool | None,
) -> int:
    if read_by_sender is None:
        read_by_sender = default_read_by_sender(client_name) and not checked.to_self
    row = (
        await tx.conn.execute(
            sa.insert(scheduled_message)
            .values(
                realm_id=sender.realm_id,
                sender_id=sender.id,
                scheduled_timestamp=deliver_at,
                read_by_sender=read_by_sender,
                sending_client=client_name[:30],
                **checked.values(),
            )
            .returning(*scheduled_message.c)
        )
    ).one()
    await do_update_scheduled_message_attachments(tx, sender, row.id, checked.content)
    event = {
        "type": "scheduled_messages",
        "op": "add",
        "scheduled_messages": [scheduled_message_dict(row)],
    }
    tx.notify(sender.realm_id, event, [sender.id])
    _wake_delivery_after_commit(tx, deliver_at)
    return int(row.id)


@dataclass(frozen=True)
class ScheduledEdit:
    """The parameters of ``PATCH /scheduled_messages/{id}``; None: unchanged."""

    kind: str | None = None
    to: str | None = None
    topic: str | None = None
    content: str | None = None
    deliver_at: int | None = None

    def check_shape(self) -> None:
        """The view's checks, before the message is looked at."""
        if (self.kind, self.to, self.topic, self.content, self.deliver_at) == (None,) * 5:
            raise JsonableError("Nothing to change")
        if self.kind is not None and self.to is None:
            raise JsonableError("Recipient required when updating type of scheduled message.")
        if self.kind == "stream" and self.topic is None:
            raise JsonableError("Topic required when updating scheduled message type to stream.")


async def check_edit_scheduled_message(
    tx: Tx,
    realm: Realm,
    sender: User,
    scheduled_message_id: int,
    edit: ScheduledEdit,
    *,
    client_name: str,
    realm_url: str,
) -> None:
    row = await access_scheduled_message(tx.conn, sender, scheduled_message_id, lock=True)
    if row.delivered:
        raise JsonableError("Scheduled message was already sent")
    if row.failed and edit.deliver_at is None:
        raise JsonableError(NOT_IN_FUTURE)
    values: dict[str, Any] = {"sending_client": client_name[:30]}
    if edit.kind is not None or edit.to is not None or edit.content is not None:
        kind = edit.kind or row.message_type
        to: int | list[int]
        if edit.to is not None:
            to = parse_scheduled_to(kind, edit.to)
        elif row.message_type == "stream":
            to = int(row.stream_id)
        else:
            to = list(orjson.loads(row.to_user_ids))
        # A new kind without a stream id must have come with a ``to`` (checked above).
        checked = await check_scheduled_message(
            tx,
            realm,
            sender,
            kind=kind,
            to=to,
            topic=edit.topic if edit.topic is not None else row.topic,
            content=edit.content if edit.content is not None else row.content,
            realm_url=realm_url,
        )
        if edit.kind is not None or edit.to is not None:
            all_values = checked.values()
            for key in ("message_type", "stream_id", "to_user_ids", "topic"):
                values[key] = all_values[key]
        if edit.content is not None:
            values.update(content=checked.content, rendered_content=checked.rendered_content)
    if "topic" not in values and edit.topic is not None and row.message_type == "stream":
        values["topic"] = normalize_topic(realm, edit.topic)
    if edit.deliver_at is not None:
        values["scheduled_timestamp"] = edit.deliver_at
    # Editing a message the server failed to send re-arms it (feature level 181).
    values.update(failed=False, failure_message=None)
    updated = (
        await tx.conn.execute(
            sa.update(scheduled_message)
            .where(scheduled_message.c.id == row.id)
            .values(**values)
            .returning(*scheduled_message.c)
        )
    ).one()
    if edit.content is not None:
        await do_update_scheduled_message_attachments(tx, sender, row.id, updated.content)
    notify_scheduled_message_update(tx, sender, updated)
    _wake_delivery_after_commit(tx, float(updated.scheduled_timestamp))


async def do_delete_scheduled_message(tx: Tx, sender: User, scheduled_message_id: int) -> None:
    row = await access_scheduled_message(tx.conn, sender, scheduled_message_id, lock=True)
    await tx.conn.execute(sa.delete(scheduled_message).where(scheduled_message.c.id == row.id))
    notify_scheduled_message_remove(tx, sender, row.id)
