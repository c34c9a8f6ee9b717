"""Moving messages to another topic and/or stream, after the edited message itself moved.

Behaviour follows Zulip 8.0's ``do_update_message``:
- ``propagate_mode`` picks the other messages of the old topic (matched case-insensitively
  in the old stream): none (``change_one``), the later ones (``change_later``) or all
  (``change_all``). A move between streams takes only messages the acting user can read,
  so nobody gains access to messages by moving them; a topic edit within a stream takes
  them all, to keep topics together.
- Each moved message gets a history entry with only the topic and stream fields.
- A move to another stream drops the rows of everyone who had any subscription to the old
  stream and is not subscribed to the new one; of those, the ones who can no longer read
  the messages (everyone, for a private new stream; guests, for a public one) get
  ``delete_message`` events. A new stream whose history is not shared gives each current
  subscriber a (read) row, since being subscribed when a message arrives is what grants
  access there; a stream with shared history needs none.
- When the acting user moved every message of the topic they can read, users' topic
  policies (muted, followed, ...) move with it (see ``move_user_topics``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
import sqlalchemy as sa

from hubbub.actions.edit_checks import TargetMessage
from hubbub.actions.move_user_topics import migrate_user_topics
from hubbub.db.dialects import (
    for_name,
    hold_off_settling,
    settle_messages,
    user_message_settled,
    user_message_tables,
)
from hubbub.db.tables import message, subscription, user_message, user_profile
from hubbub.events.queues import DELETE_FORM_MARK
from hubbub.models import Role, Stream, User
from hubbub.queries.messages import READ, can_access_stream_history
from hubbub.transaction import Tx


@dataclass
class MoveResult:
    # Every moved message (the edited one included), ascending.
    message_ids: list[int]
    # Users who can no longer read the moved messages (they got ``delete_message``).
    losing_access: set[int] = field(default_factory=set)


def _topic_is(recipient_id: int, topic: str) -> sa.ColumnElement[bool]:
    return sa.and_(
        message.c.recipient_id == recipient_id, sa.func.lower(message.c.topic) == topic.lower()
    )


async def do_move_messages(
    tx: Tx,
    user: User,
    msg: TargetMessage,
    old_stream: Stream,
    *,
    new_stream: Stream | None,
    new_topic: str | None,
    new_recipient_id: int,
    propagate_mode: str,
    entry: dict[str, Any],
    now: float,
) -> MoveResult:
    """Move the other messages ``propagate_mode`` selects (``msg`` has moved already) and
    fix rows and topic policies; ``entry`` is the topic/stream history entry."""
    target_stream = new_stream or old_stream
    target_topic = new_topic if new_topic is not None else msg.topic
    target_had_messages = (
        await tx.conn.execute(
            sa.select(message.c.id)
            .where(_topic_is(new_recipient_id, target_topic), message.c.id != msg.id)
            .limit(1)
        )
    ).first() is not None
    readable_only = new_stream is not None and not await can_access_stream_history(
        tx.conn, user, old_stream
    )
    others: list[Any] = []
    if propagate_mode != "change_one":
        query = sa.select(message.c.id, message.c.edit_history).where(
            _topic_is(msg.recipient_id, msg.topic), message.c.id != msg.id
        )
        if propagate_mode == "change_later":
            query = query.where(message.c.id > msg.id)
        if readable_only:
            query = query.where(message.c.id.in_(_rows_of(user.id)))
        others = list(await tx.conn.execute(query.order_by(message.c.id)))
    if others:
        await tx.conn.execute(
            sa.update(message)
            .where(message.c.id == sa.bindparam("b_id"))
            .values(
                topic=target_topic,
                recipient_id=new_recipient_id,
                last_edit_time=now,
                edit_history=sa.bindparam("b_history"),
            ),
            [
                {
                    "b_id": row.id,
                    "b_history": orjson.dumps(
                        [entry, *(orjson.loads(row.edit_history) if row.edit_history else [])]
                    ).decode(),
                }
                for row in others
            ],
        )
    result = MoveResult(sorted([msg.id, *(row.id for row in others)]))
    if new_stream is not None:
        result.losing_access = await _move_rows(tx, old_stream, new_stream, msg, result)
    if await _moved_all_visible(tx, user, msg, old_stream, propagate_mode):
        await migrate_user_topics(
            tx,
            old_stream,
            msg.topic,
            target_stream,
            target_topic,
            target_had_messages=target_had_messages,
            losing_access=result.losing_access,
            now=now,
        )
    return result


def _rows_of(user_id: int) -> sa.Select[tuple[int]]:
    return sa.select(user_message.c.message_id).where(user_message.c.user_profile_id == user_id)


async def _move_rows(
    tx: Tx, old_stream: Stream, new_stream: Stream, msg: TargetMessage, moved: MoveResult
) -> set[int]:
    """Rows for a move between streams; the users who lose access (already notified)."""
    # Several messages' staged rows, message by message: no move of them meanwhile.
    await hold_off_settling(tx.conn)
    # Former subscribers too: they may have rows from when they were subscribed.
    old_all = {
        r.user_profile_id: r.role
        for r in await tx.conn.execute(
            sa.select(subscription.c.user_profile_id, user_profile.c.role)
            .join(user_profile, user_profile.c.id == subscription.c.user_profile_id)
            .where(subscription.c.stream_id == old_stream.id)
        )
    }
    new_current = set(
        (
            await tx.conn.execute(
                sa.select(subscription.c.user_profile_id).where(
                    subscription.c.stream_id == new_stream.id, subscription.c.active
                )
            )
        ).scalars()
    )
    losing_rows = set(old_all) - new_current
    if new_stream.is_public:
        losing_access = {uid for uid in losing_rows if old_all[uid] == Role.GUEST}
    else:
        losing_access = set(losing_rows)
    if not new_stream.history_public_to_subscribers and new_current:
        # Some of these rows may exist, staged: settled, the key's conflict finds them.
        await settle_messages(tx.conn, moved.message_ids)
        insert = for_name(tx.conn.dialect.name).insert(user_message_settled(tx.conn))
        await tx.conn.execute(
            insert.on_conflict_do_nothing(),
            [
                {"user_profile_id": uid, "message_id": mid, "flags": READ}
                for uid in sorted(new_current)
                for mid in moved.message_ids
            ],
        )
    if losing_rows:
        for table in user_message_tables(tx.conn):
            await tx.conn.execute(
                sa.delete(table).where(
                    table.c.user_profile_id.in_(sorted(losing_rows)),
                    table.c.message_id.in_(moved.message_ids),
                )
            )
    if losing_access:
        _notify_lost(tx, msg, old_stream, moved.message_ids, sorted(losing_access))
    return losing_access


def _notify_lost(
    tx: Tx, msg: TargetMessage, old_stream: Stream, message_ids: list[int], users: list[int]
) -> None:
    """``delete_message`` for users who lost access, in both of the queue layer's forms:
    the bulk one (``message_ids``) for queues with the ``bulk_message_deletion``
    capability, one event per message for the others; each queue keeps its own form."""
    base = {
        "type": "delete_message",
        "message_type": "stream",
        "stream_id": old_stream.id,
        "topic": msg.topic,
    }
    tx.notify(msg.realm_id, {**base, "message_ids": message_ids, DELETE_FORM_MARK: "bulk"}, users)
    for message_id in message_ids:
        event = {**base, "message_id": message_id, DELETE_FORM_MARK: "single"}
        tx.notify(msg.realm_id, event, users)


async def _moved_all_visible(
    tx: Tx, user: User, msg: TargetMessage, old_stream: Stream, propagate_mode: str
) -> bool:
    """Whether the user moved the whole topic as far as they can see it (then topic
    policies move too). Asked with the user's own access, so it reveals nothing about
    messages they cannot read."""
    if propagate_mode == "change_all":
        return True
    query = sa.select(message.c.id).where(_topic_is(msg.recipient_id, msg.topic)).limit(1)
    if not await can_access_stream_history(tx.conn, user, old_stream):
        query = query.where(message.c.id.in_(_rows_of(user.id)))
    return (await tx.conn.execute(query)).first() is None
