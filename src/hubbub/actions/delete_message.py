"""Deleting messages: one message (``DELETE /messages/{message_id}``) and a topic's
messages batch by batch (``POST /streams/{stream_id}/delete_topic``).

``do_delete_messages`` is the only place rows of ``message`` are removed; everything that
must happen when a message goes (events now, attachment clean-up later) hangs off it.
Zulip 8.0 moves deleted messages to an archive (kept for the retention period and
restorable); hubbub has no archive yet, so deletion is permanent.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from hubbub.actions.attachments import do_release_message_attachments
from hubbub.db.dialects import hold_off_settling, user_message_tables
from hubbub.db.tables import message, recipient, stream, subscription, user_message, user_profile
from hubbub.errors import JsonableError
from hubbub.events.queues import DELETE_FORM_MARK
from hubbub.models import Realm, Stream, User
from hubbub.permissions import user_has_permission
from hubbub.queries.message_dicts import RECIPIENT_STREAM
from hubbub.queries.messages import access_message
from hubbub.queries.streams import get_stream_by_id
from hubbub.transaction import Tx

# Zulip deletes a topic newest first, 100 messages per transaction (its retention
# module's stream batch size), and stops starting new batches after 50 s.
DELETE_TOPIC_BATCH_SIZE = 100
DELETE_TOPIC_TIME_LIMIT_SECONDS = 50.0


@dataclass(frozen=True)
class _Doomed:
    """A message about to be deleted, with what its ``delete_message`` event needs."""

    id: int
    recipient_type: int
    # The stream id for a stream message (the recipient's type_id).
    type_id: int
    topic: str


async def check_delete_message(
    tx: Tx, realm: Realm, acting: User, message_id: int, *, now: float
) -> None:
    """``DELETE /messages/{message_id}``: Zulip 10.2's rules. Members of the realm's
    ``can_delete_any_message_group`` (feature level 281) may delete any message they can
    read; others only their own messages (or their bots'), when they belong to
    ``can_delete_own_message_group`` (feature level 291), within
    ``message_content_delete_limit_seconds`` (null: no limit) of sending."""
    # Lock the row first, so that two concurrent deletions of one message serialize (the
    # second then finds no message) and an edit in flight cannot interleave.
    locked = (
        await tx.conn.execute(
            sa.select(message.c.id).where(message.c.id == message_id).with_for_update()
        )
    ).first()
    if locked is None:
        raise JsonableError("Invalid message(s)")
    await access_message(tx.conn, acting, message_id)
    row = (
        await tx.conn.execute(
            sa.select(message.c.sender_id, message.c.date_sent, user_profile.c.bot_owner_id)
            .join(user_profile, user_profile.c.id == message.c.sender_id)
            .where(message.c.id == message_id)
        )
    ).one()
    if not await user_has_permission(tx.conn, acting, realm, "can_delete_any_message_group"):
        await check_can_delete_own_message(
            tx, realm, acting, sender_id=row.sender_id, bot_owner_id=row.bot_owner_id
        )
        limit = realm.setting("message_content_delete_limit_seconds")
        if limit is not None and now - float(row.date_sent) > limit:
            raise JsonableError("The time limit for deleting this message has passed")
    await do_delete_messages(tx, realm.id, [message_id], acting_user_id=acting.id)


async def check_can_delete_own_message(
    tx: Tx, realm: Realm, acting: User, *, sender_id: int, bot_owner_id: int | None
) -> None:
    # One's own messages and one's bots' messages, and only under the realm's setting.
    if sender_id != acting.id and bot_owner_id != acting.id:
        raise JsonableError("You don't have permission to delete this message")
    if not await user_has_permission(tx.conn, acting, realm, "can_delete_own_message_group"):
        raise JsonableError("You don't have permission to delete this message")


async def do_delete_topic_batch(tx: Tx, acting: User, target: Stream, topic_name: str) -> int:
    """Delete the newest batch of the topic's messages that ``acting`` may see; the number
    deleted (0 once the topic is empty). Each batch is its own transaction, so a topic too
    large for one request is left consistent (whole batches gone) and a repeated request
    carries on where this one stopped."""
    query = (
        sa.select(message.c.id)
        .join(recipient, recipient.c.id == message.c.recipient_id)
        .where(
            message.c.realm_id == target.realm_id,
            recipient.c.type == RECIPIENT_STREAM,
            recipient.c.type_id == target.id,
            # Topics match case-insensitively, as in narrows and Zulip's topic queries.
            sa.func.lower(message.c.topic) == topic_name.lower(),
        )
        .order_by(message.c.id.desc())
        .limit(DELETE_TOPIC_BATCH_SIZE)
        .with_for_update(of=message)
    )
    if not target.history_public_to_subscribers:
        # Protected history: only the messages the administrator received (Zulip's rule).
        query = query.where(
            sa.exists().where(
                user_message.c.message_id == message.c.id,
                user_message.c.user_profile_id == acting.id,
            )
        )
    ids = [int(mid) for (mid,) in await tx.conn.execute(query)]
    return len(await do_delete_messages(tx, target.realm_id, ids, acting_user_id=acting.id))


async def do_delete_messages(
    tx: Tx, realm_id: int, message_ids: list[int], *, acting_user_id: int | None = None
) -> list[int]:
    """Delete messages (with their per-user rows; reactions and submessages go by the
    foreign keys' cascade, the search index by its triggers) and tell who needs to know.
    Returns the ids actually deleted (those that still existed in the realm).
    ``acting_user_id`` is the user who asked for the deletion (None for retention): they
    hear of it even without a subscription (feature level 274).

    This is the single place messages are removed: the attachment clean-up (next issue)
    hooks in at the marked point, while the rows still exist."""
    doomed = await _load(tx, realm_id, message_ids)
    if not doomed:
        return []
    ids = [m.id for m in doomed]
    audiences = await _audiences(tx, doomed)
    if acting_user_id is not None:
        for m in doomed:
            audiences[_group_key(m)].add(acting_user_id)
    # Attachments go before the rows: links dropped, files no other message refers to removed.
    await do_release_message_attachments(tx, ids)
    if len(ids) > 1:
        # Several messages' staged rows, message by message: no move of them meanwhile.
        await hold_off_settling(tx.conn)
    for table in user_message_tables(tx.conn):
        await tx.conn.execute(sa.delete(table).where(table.c.message_id.in_(ids)))
    await tx.conn.execute(sa.delete(message).where(message.c.id.in_(ids)))
    _notify_deleted(tx, realm_id, doomed, audiences)
    if acting_user_id is not None:
        # As in Zulip, only deletions someone asked for move a stream's first_message_id;
        # the retention policy (the one deletion here without an acting user) does not.
        await _update_first_message_ids(tx, realm_id, doomed, audiences)
    return ids


async def _update_first_message_ids(
    tx: Tx,
    realm_id: int,
    doomed: list[_Doomed],
    audiences: dict[tuple[int, int, str], set[int]],
) -> None:
    """A stream whose first message went gets its next oldest one as ``first_message_id``
    (None when none is left), and a ``stream`` update event says so to those who heard of
    the deletion, as in Zulip (feature level 256)."""
    deleted = {m.id for m in doomed}
    stream_ids = sorted({m.type_id for m in doomed if m.recipient_type == RECIPIENT_STREAM})
    for stream_id in stream_ids:
        target = await get_stream_by_id(tx.conn, realm_id, stream_id)
        if target is None or target.first_message_id not in deleted:
            continue
        first = (
            await tx.conn.execute(
                sa.select(sa.func.min(message.c.id))
                .join(recipient, recipient.c.id == message.c.recipient_id)
                .where(recipient.c.type == RECIPIENT_STREAM, recipient.c.type_id == stream_id)
            )
        ).scalar()
        await tx.conn.execute(
            sa.update(stream).where(stream.c.id == stream_id).values(first_message_id=first)
        )
        users = sorted(
            set().union(
                *(ids for key, ids in audiences.items() if key[:2] == (RECIPIENT_STREAM, stream_id))
            )
        )
        event = {
            "type": "stream",
            "op": "update",
            "stream_id": stream_id,
            "name": target.name,
            "property": "first_message_id",
            "value": first,
        }
        if users:
            tx.notify(realm_id, event, users)


async def _load(tx: Tx, realm_id: int, message_ids: list[int]) -> list[_Doomed]:
    if not message_ids:
        return []
    rows = await tx.conn.execute(
        sa.select(message.c.id, recipient.c.type, recipient.c.type_id, message.c.topic)
        .join(recipient, recipient.c.id == message.c.recipient_id)
        .where(message.c.id.in_(message_ids), message.c.realm_id == realm_id)
        .order_by(message.c.id)
    )
    return [_Doomed(int(r.id), int(r.type), int(r.type_id), str(r.topic)) for r in rows]


def _group_key(m: _Doomed) -> tuple[int, int, str]:
    # One event per stream topic (the event names one stream and topic; topics that differ
    # only in case stay apart so each event names its messages' exact topic), and one per
    # direct message, as Zulip sends them.
    if m.recipient_type == RECIPIENT_STREAM:
        return (RECIPIENT_STREAM, m.type_id, m.topic)
    return (m.recipient_type, m.id, "")


async def _audiences(tx: Tx, doomed: list[_Doomed]) -> dict[tuple[int, int, str], set[int]]:
    """Who hears of each group's deletion: everyone with a row for one of its messages
    (their unread and starred state changes), and for stream messages the stream's active
    subscribers, who may have the messages from its history (Zulip notifies those). A
    stream with protected history gets no subscribers beyond the rows: they could never
    see the messages, so an event would only leak the topic's name."""
    ids = [m.id for m in doomed]
    key_of = {m.id: _group_key(m) for m in doomed}
    audiences: dict[tuple[int, int, str], set[int]] = defaultdict(set)
    rows = await tx.conn.execute(
        sa.select(user_message.c.message_id, user_message.c.user_profile_id).where(
            user_message.c.message_id.in_(ids)
        )
    )
    for message_id, user_id in rows:
        audiences[key_of[int(message_id)]].add(int(user_id))
    stream_ids = {m.type_id for m in doomed if m.recipient_type == RECIPIENT_STREAM}
    if stream_ids:
        subs = await tx.conn.execute(
            sa.select(subscription.c.stream_id, subscription.c.user_profile_id)
            .join(stream, stream.c.id == subscription.c.stream_id)
            .join(user_profile, user_profile.c.id == subscription.c.user_profile_id)
            .where(
                subscription.c.stream_id.in_(stream_ids),
                subscription.c.active,
                user_profile.c.is_active,
                stream.c.history_public_to_subscribers,
            )
        )
        subscribers: dict[int, set[int]] = defaultdict(set)
        for stream_id, user_id in subs:
            subscribers[int(stream_id)].add(int(user_id))
        for key in {key_of[i] for i in ids}:
            if key[0] == RECIPIENT_STREAM:
                audiences[key] |= subscribers[key[1]]
    return audiences


def _notify_deleted(
    tx: Tx,
    realm_id: int,
    doomed: list[_Doomed],
    audiences: dict[tuple[int, int, str], set[int]],
) -> None:
    """``delete_message`` events. Each group is published twice: once in the bulk form
    (``message_ids``) for queues with the ``bulk_message_deletion`` capability, and as one
    event per message (``message_id``) for the others; the private form mark lets each
    queue keep only its own form (see ``shape_event``)."""
    groups: dict[tuple[int, int, str], list[_Doomed]] = defaultdict(list)
    for m in doomed:
        groups[_group_key(m)].append(m)
    for key, members in groups.items():
        users = sorted(audiences.get(key, ()))
        if not users:
            continue
        base: dict[str, Any] = {"type": "delete_message"}
        if key[0] == RECIPIENT_STREAM:
            base.update(message_type="stream", stream_id=key[1], topic=key[2])
        else:
            base["message_type"] = "private"
        ids = [m.id for m in members]
        tx.notify(realm_id, {**base, "message_ids": ids, DELETE_FORM_MARK: "bulk"}, users)
        for message_id in ids:
            tx.notify(
                realm_id, {**base, "message_id": message_id, DELETE_FORM_MARK: "single"}, users
            )
