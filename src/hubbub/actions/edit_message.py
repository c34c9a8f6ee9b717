"""Editing a message (``PATCH /messages/{message_id}``): content, topic and stream.

The checks live in ``edit_checks`` (in Zulip 8.0's order), content rendering and flags in
``edit_content``, moving the other messages of a topic in ``move_messages``. This module
puts them together in one transaction:

- the message gets ``last_edit_time`` and a history entry (newest first) holding only what
  changed: ``prev_content``/``prev_rendered_content``, ``prev_stream``/``stream``,
  ``prev_topic``/``topic`` (the names since feature level 118); message objects derive
  ``last_edit_timestamp`` and ``last_moved_timestamp`` from these entries
  (``queries/edit_timestamps``, feature level 365);
- one ``update_message`` event goes to every user with a row for the message, with that
  user's flags, and (as Zulip does, so open narrows update live) to the other subscribers
  of a stream whose history they can read, with ``["read"]``;
- a move notifies its ``delete_message`` and topic-policy events before that one;
- the response lists the acting user's uploads that the new content no longer links and
  no other message links either (``detached_uploads``, feature level 285).

``send_notification_to_old_thread`` / ``send_notification_to_new_thread`` are accepted but
post nothing: Zulip's notices come from its Notification Bot, which hubbub does not have yet.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.attachments import do_update_message_attachments
from hubbub.actions.edit_checks import (
    EditRequest,
    TargetMessage,
    access_stream_for_move,
    check_change_all_time_limit,
    check_content_edit_permission,
    check_edit_payload,
    check_topic_edit_permission,
    load_target_message,
)
from hubbub.actions.edit_content import (
    RENDERED_CONTENT_VERSION,
    ContentEdit,
    render_content_edit,
    update_content_flags,
)
from hubbub.actions.message_recipients import stream_recipient_id
from hubbub.actions.move_messages import MoveResult, do_move_messages
from hubbub.db.tables import message, stream, user_message
from hubbub.errors import JsonableError
from hubbub.markdown import RenderContext, topic_links
from hubbub.models import Realm, Stream, User
from hubbub.queries.attachments import get_detached_uploads, get_linked_attachment_ids
from hubbub.queries.linkifiers import render_linkifiers
from hubbub.queries.messages import access_message, flag_names
from hubbub.queries.streams import get_subscriber_ids
from hubbub.topic_names import (
    EMPTY_TOPIC_DISPLAY_NAME,
    LEGACY_NO_TOPIC,
    RESOLVED_TOPIC_PREFIX,
    interpret_topic_name,
)
from hubbub.transaction import Tx


@dataclass(frozen=True)
class EditResult:
    changed_count: int
    # Attachment objects (``queries.attachments.get_attachment_dicts``).
    detached_uploads: list[dict[str, Any]] = field(default_factory=list)


async def check_update_message(
    tx: Tx,
    realm: Realm,
    user: User,
    message_id: int,
    req: EditRequest,
    *,
    realm_url: str,
    now: float,
) -> EditResult:
    """Validate and edit."""
    await access_message(tx.conn, user, message_id)
    msg = await load_target_message(tx.conn, message_id)
    if req.content is not None:
        check_content_edit_permission(realm, user, msg, now)
    # The empty topic's display name means the empty topic (feature level 334).
    topic = interpret_topic_name(req.topic.strip()) if req.topic is not None else None
    if topic == msg.topic:
        topic = None
    if topic is not None and msg.stream_id is not None:
        check_edited_topic(realm, topic)
    # The message's own stream is no move (Zulip's clients never send it; treating it as
    # one would drop former subscribers' rows for nothing).
    stream_id = None if req.stream_id == msg.stream_id else req.stream_id
    topic = await check_edit_payload(
        tx.conn,
        realm,
        msg,
        content=req.content,
        topic=topic,
        stream_id=stream_id,
        propagate_mode=req.propagate_mode,
    )
    if topic is not None:
        await check_topic_edit_permission(tx.conn, realm, user, msg, topic, now)
    edit = None
    if req.content is not None:
        edit = await render_content_edit(tx, realm, user, msg, req.content, realm_url=realm_url)
    new_stream = None
    if stream_id is not None:
        new_stream = await access_stream_for_move(tx.conn, realm, user, msg, stream_id, now)
    if req.propagate_mode == "change_all" and (topic is not None or new_stream is not None):
        await check_change_all_time_limit(
            tx.conn,
            realm,
            user,
            msg,
            topic_changed=topic is not None,
            stream_changed=new_stream is not None,
            now=now,
        )
    return await do_update_message(
        tx,
        user,
        msg,
        edit=edit,
        new_topic=topic,
        new_stream=new_stream,
        propagate_mode=req.propagate_mode,
        now=now,
    )


def check_edited_topic(realm: Realm, topic: str) -> None:
    """Zulip 10.2's checks of a new topic that only edits make, before the checks it
    shares with sending (``check_edit_payload``): these come first for a stream message,
    and their wording is the edit's own."""
    if realm.setting("mandatory_topics") and topic in ("", LEGACY_NO_TOPIC):
        raise JsonableError("Topics are required in this organization.")
    # Resolving the empty topic would give a topic that is only the resolved mark.
    if topic in (RESOLVED_TOPIC_PREFIX.strip(), RESOLVED_TOPIC_PREFIX + EMPTY_TOPIC_DISPLAY_NAME):
        raise JsonableError("General chat cannot be marked as resolved")


async def _stream_of(conn: AsyncConnection, stream_id: int) -> Stream:
    # Archived streams included: their messages stay readable and editable.
    return Stream.from_row(
        (await conn.execute(sa.select(stream).where(stream.c.id == stream_id))).one()
    )


async def _topic_links(conn: AsyncConnection, realm_id: int, topic: str) -> list[dict[str, str]]:
    linkifiers = await render_linkifiers(conn, realm_id)
    # Without linkifiers Zulip sends no links, not even for bare URLs (as message objects).
    return topic_links(topic, RenderContext(linkifiers=linkifiers)) if linkifiers else []


async def do_update_message(
    tx: Tx,
    user: User,
    msg: TargetMessage,
    *,
    edit: ContentEdit | None,
    new_topic: str | None,
    new_stream: Stream | None,
    propagate_mode: str,
    now: float,
) -> EditResult:
    """Apply an edit that passed every check."""
    edit_time = int(now)
    detached: list[dict[str, Any]] = []
    event: dict[str, Any] = {
        "type": "update_message",
        "user_id": user.id,
        "edit_timestamp": edit_time,
        "message_id": msg.id,
        "rendering_only": False,
    }
    entry: dict[str, Any] = {"user_id": user.id, "timestamp": edit_time}
    values: dict[str, Any] = {"last_edit_time": now}
    old_stream = await _stream_of(tx.conn, msg.stream_id) if msg.stream_id is not None else None
    if old_stream is not None:
        # Both for every stream message edit since feature level 112.
        event["stream_name"] = old_stream.name
        event["stream_id"] = old_stream.id
    if edit is not None:
        # No ``prev_rendered_content_version`` in either since feature level 284.
        event.update(
            orig_content=msg.content,
            orig_rendered_content=msg.rendered_content or "",
            content=edit.content,
            rendered_content=edit.rendered.html,
            is_me_message=edit.is_me_message,
        )
        entry.update(
            prev_content=msg.content,
            prev_rendered_content=msg.rendered_content or "",
        )
        linked_before = await get_linked_attachment_ids(tx.conn, msg.id)
        await do_update_message_attachments(tx, user, msg.id, edit.content)
        detached = await get_detached_uploads(tx.conn, user, linked_before)
        values.update(
            content=edit.content,
            rendered_content=edit.rendered.html,
            rendered_content_version=RENDERED_CONTENT_VERSION,
            has_attachment=edit.rendered.has_attachment,
            has_image=edit.rendered.has_image,
            has_link=edit.rendered.has_link,
            is_me_message=edit.is_me_message,
        )
    # The other moved messages' entries carry only the topic and stream fields.
    move_entry: dict[str, Any] = {"user_id": user.id, "timestamp": edit_time}
    recipient_id = msg.recipient_id
    if new_stream is not None:
        assert old_stream is not None
        recipient_id = await stream_recipient_id(tx.conn, new_stream.id)
        values["recipient_id"] = recipient_id
        move_entry.update(prev_stream=old_stream.id, stream=new_stream.id)
        event["new_stream_id"] = new_stream.id
    if new_topic is not None:
        values["topic"] = new_topic
        move_entry.update(prev_topic=msg.topic, topic=new_topic)
        # The legacy names: "subject" is the topic.
        event["subject"] = new_topic
        event["topic_links"] = await _topic_links(tx.conn, msg.realm_id, new_topic)
    if new_topic is not None or new_stream is not None:
        event["orig_subject"] = msg.topic
        event["propagate_mode"] = propagate_mode
        entry.update({k: v for k, v in move_entry.items() if k not in entry})
    values["edit_history"] = orjson.dumps([entry, *msg.edit_history]).decode()
    await tx.conn.execute(sa.update(message).where(message.c.id == msg.id).values(**values))

    moved = MoveResult([msg.id])
    if old_stream is not None and (new_topic is not None or new_stream is not None):
        moved = await do_move_messages(
            tx,
            user,
            msg,
            old_stream,
            new_stream=new_stream,
            new_topic=new_topic,
            new_recipient_id=recipient_id,
            propagate_mode=propagate_mode,
            entry=move_entry,
            now=now,
        )
    if edit is not None:
        await update_content_flags(tx, msg, edit, topic=new_topic or msg.topic)
    event["message_ids"] = moved.message_ids
    await notify_update_message(tx, msg, old_stream, event, moved.losing_access)
    return EditResult(len(moved.message_ids), detached)


async def notify_update_message(
    tx: Tx,
    msg: TargetMessage,
    old_stream: Stream | None,
    event: dict[str, Any],
    losing_access: set[int],
) -> None:
    """The event to each user with a row (their own flags for the edited message), and
    ``["read"]`` to the old stream's other subscribers when its history is shared."""
    by_flags: dict[tuple[str, ...], list[int]] = defaultdict(list)
    holders = set()
    rows = await tx.conn.execute(
        sa.select(user_message.c.user_profile_id, user_message.c.flags).where(
            user_message.c.message_id == msg.id
        )
    )
    for uid, flags in rows:
        holders.add(uid)
        by_flags[tuple(flag_names(int(flags)))].append(uid)
    if old_stream is not None and old_stream.history_public_to_subscribers:
        subscribers = (await get_subscriber_ids(tx.conn, [old_stream.id]))[old_stream.id]
        others = [u for u in subscribers if u not in holders and u not in losing_access]
        by_flags[("read",)].extend(others)
    for names, user_ids in by_flags.items():
        if user_ids:
            tx.notify(msg.realm_id, {**event, "flags": list(names)}, sorted(user_ids))
