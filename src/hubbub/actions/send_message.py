"""Sending a message (``POST /messages``): validation, rendering, the rows, the events.

Behaviour follows Zulip 10.2:
- content loses trailing whitespace and leading blank lines; what remains must not be
  empty; past 10000 characters it is cut and ends with "\\n[message truncated]";
- a stream message needs a topic, cut to 60 characters ending in "..."; it may be empty
  ("general chat", feature level 334) unless the realm requires topics, and the empty
  topic's display name and the legacy "(no topic)" (feature level 370) mean it;
- one transaction writes the message and one ``user_message`` row per recipient; the
  ``message`` events (one per distinct set of flags) are published after commit.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, replace
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.attachments import do_update_message_attachments
from hubbub.actions.direct_message_permissions import check_direct_message_permission
from hubbub.actions.mention_flags import get_mention_targets, topic_participants
from hubbub.actions.message_follow import apply_automatic_policies
from hubbub.actions.message_recipients import (
    direct_recipient_id,
    incoming_direct_recipient_id,
    parse_direct_to,
    parse_stream_to,
    resolve_direct_recipients,
    stream_recipient_id,
)
from hubbub.actions.push_notifications import enqueue_message_push
from hubbub.actions.stream_activity import note_stream_activity
from hubbub.db.dialects import for_name
from hubbub.db.engine import Database
from hubbub.db.fast import fetch_rows
from hubbub.db.tables import muted_user, stream
from hubbub.errors import (
    JsonableError,
    StreamDoesNotExistError,
    StreamIdDoesNotExistError,
    StreamWildcardMentionNotAllowedError,
    TopicWildcardMentionNotAllowedError,
)
from hubbub.events.queues import MESSAGE_MARK
from hubbub.markdown import RenderContext, RenderResult, find_alert_words
from hubbub.models import Realm, Stream, User
from hubbub.permissions import (
    WILDCARD_MENTION_THRESHOLD,
    check_not_archived_target,
    check_stream_send_permission,
    user_has_permission,
)
from hubbub.queries.alert_words import alert_words_in_realm
from hubbub.queries.message_dicts import NewMessage, new_message_dict
from hubbub.queries.messages import (
    HISTORICAL,
    IS_PRIVATE,
    READ,
    flag_names,
)
from hubbub.queries.render_context import load_render_context
from hubbub.queries.streams import get_send_stream
from hubbub.queries.user_dicts import avatar_url
from hubbub.queries.user_settings import get_json_user_settings
from hubbub.rendering import render_markdown_off_loop
from hubbub.topic_names import LEGACY_NO_TOPIC, check_topic_characters, interpret_topic_name
from hubbub.transaction import Tx

MAX_MESSAGE_LENGTH = 10000
MAX_TOPIC_LENGTH = 60
TRUNCATED_SUFFIX = "\n[message truncated]"

# Statements every send runs, built once (see docs/subsystems/storage.md).
_MUTERS = sa.select(muted_user.c.user_profile_id).where(
    muted_user.c.muted_user_id == sa.bindparam("sender_id")
)

# Zulip's stream_post_policy values.
POST_POLICY_EVERYONE = 1
POST_POLICY_ADMINS = 2
POST_POLICY_RESTRICT_NEW_MEMBERS = 3
POST_POLICY_MODERATORS = 4

# Clients that are a person typing (not an integration using the person's API key): their
# messages start out read for the sender when ``read_by_sender`` is not given (Zulip's
# heuristic; the parameter is feature level 236).
_INTERACTIVE_CLIENTS = frozenset(
    {
        "website",
        "zulipandroid",
        "zulipios",
        "zulipdesktop",
        "zulipmobile",
        "zulipelectron",
        "zulipterminal",
        "snipe",
        "ios",
        "android",
    }
)


def default_read_by_sender(client_name: str) -> bool:
    name = client_name.lower()
    return name in _INTERACTIVE_CLIENTS or "desktop app" in name


def normalize_content(content: str) -> str:
    content = content.rstrip().lstrip("\n")
    if not content:
        raise JsonableError("Message must not be empty")
    if "\x00" in content:
        raise JsonableError("Message must not contain null bytes")
    if len(content) > MAX_MESSAGE_LENGTH:
        content = content[: MAX_MESSAGE_LENGTH - len(TRUNCATED_SUFFIX)] + TRUNCATED_SUFFIX
    return content


def normalize_topic(realm: Realm, topic: str | None, *, no_topic_is_empty: bool = True) -> str:
    """A stream message's topic as stored: trimmed, the empty topic's display name (and,
    with ``no_topic_is_empty``, the legacy "(no topic)", feature level 370) read as the
    empty topic, checked for unprintable characters and cut to 60 characters. A realm
    that requires topics refuses the empty one."""
    if topic is None:
        raise JsonableError("Missing topic")
    topic = interpret_topic_name(topic.strip())
    if no_topic_is_empty and topic == LEGACY_NO_TOPIC:
        topic = ""
    check_topic_characters(topic)
    if len(topic) > MAX_TOPIC_LENGTH:
        topic = topic[: MAX_TOPIC_LENGTH - 3] + "..."
    if realm.setting("mandatory_topics") and topic in ("", LEGACY_NO_TOPIC):
        raise JsonableError("Topics are required in this organization")
    return topic


async def check_stream_post_permission(conn: AsyncConnection, sender: User, target: Stream) -> None:
    # The stream's can_send_message_group (feature level 333).
    await check_stream_send_permission(conn, sender, target)


class SendTarget(NamedTuple):
    stream: Stream
    # Its active subscribers (the sender may not be among them).
    subscribers: set[int]
    # None until the stream's first message creates the row (``recipient_id``).
    known_recipient_id: int | None

    async def recipient_id(self, tx: Tx) -> int:
        """The stream's recipient id, creating its row for a first message."""
        if self.known_recipient_id is not None:
            return self.known_recipient_id
        return await stream_recipient_id(tx.conn, self.stream.id)


async def access_stream_for_send(tx: Tx, sender: User, to: int | str) -> SendTarget:
    """The active stream ``sender`` may send to (by id or name), with its subscribers
    (kept by the process while their version, read with the stream, is unchanged) and,
    read in the same statement as the stream, its recipient id."""
    found = await get_send_stream(tx.conn, sender.realm_id, to)
    if found is None:
        await check_not_archived_target(tx.conn, sender, to)
        if isinstance(to, int):
            raise StreamIdDoesNotExistError(to)
        raise StreamDoesNotExistError(to)
    target, recipient_id, version = found
    await check_stream_post_permission(tx.conn, sender, target)
    await note_stream_activity(tx, target)
    subscribers = set(await tx.subscribers.active_ids(tx.conn, target.id, version))
    subscribed = sender.id in subscribers
    # Public streams take anyone's messages but guests'; private streams (and guests
    # everywhere but web-public streams) need a subscription.
    if (target.invite_only or sender.is_guest) and not target.is_web_public and not subscribed:
        raise JsonableError(f"Not authorized to send to stream '{target.name}'")
    return SendTarget(target, subscribers, recipient_id)


@dataclass(frozen=True)
class SendRequest:
    type: str  # "stream" or "direct"
    to: str
    topic: str | None
    content: str
    client_name: str
    queue_id: str | None = None
    local_id: str | None = None
    read_by_sender: bool | None = None


@dataclass(frozen=True)
class SendResult:
    message_id: int
    # The sender's topic policy when sending changed it (feature level 218).
    automatic_new_visibility_policy: int | None = None


@dataclass(frozen=True)
class SendRendering:
    """A send's content and topic, normalized, and its Markdown rendered, with no
    recipient's alert words matched yet (``check_send_message`` matches them)."""

    content: str
    # "" for a direct message.
    topic: str
    sender_settings: dict[str, Any]
    ctx: RenderContext
    rendered: RenderResult


async def render_send(
    conn: AsyncConnection, realm: Realm, sender: User, req: SendRequest, *, realm_url: str
) -> SendRendering:
    """What ``check_send_message`` first does: the content and topic checked in Zulip's
    order (content, then topic, before any recipient), and the content rendered. Rendering
    raises nothing, so running it before the recipients are checked changes no error.

    It needs no recipient, so on SQLite the API runs it in a read transaction before
    taking the single writer (``render_before_writing``), as Zulip renders before its
    transaction: the writer is then held for the writes and the reads that must agree
    with them (the recipients, their flags), not for rendering, a large part of a small
    send's work. What it read (the sender's settings, the realm's linkifiers and
    users named) may change before the writes, as in Zulip."""
    content = normalize_content(req.content)
    topic = normalize_topic(realm, req.topic) if req.type == "stream" else ""
    sender_settings = await get_json_user_settings(conn, sender.id)
    ctx = await load_render_context(
        conn,
        realm,
        sender,
        realm_url=realm_url,
        content=content,
        sender_settings=sender_settings,
    )
    rendered = await render_markdown_off_loop(content, ctx)
    return SendRendering(content, topic, sender_settings, ctx, rendered)


async def render_before_writing(
    db: Database, realm: Realm, sender: User, req: SendRequest, *, realm_url: str
) -> SendRendering | None:
    """``render_send`` in a read transaction, where write transactions run one at a time
    (SQLite); None elsewhere: on PostgreSQL writes do not wait for one another, and the
    send's own transaction renders (a second connection would cost more)."""
    if not db.serializes_writes:
        return None
    async with db.read() as conn:
        return await render_send(conn, realm, sender, req, realm_url=realm_url)


async def check_send_message(
    tx: Tx,
    realm: Realm,
    sender: User,
    req: SendRequest,
    *,
    realm_url: str,
    now: float,
    rendering: SendRendering | None = None,
) -> SendResult:
    """Validate and send; ``rendering``: ``render_send``'s, done before this transaction
    (else done here)."""
    if rendering is None:
        rendering = await render_send(tx.conn, realm, sender, req, realm_url=realm_url)
    content, topic, ctx = rendering.content, rendering.topic, rendering.ctx
    sender_settings = rendering.sender_settings
    target: Stream | None = None
    people: list[User] = []
    incoming_recipient_id: int | None = None
    sender_subscribed = True
    subscriber_count = 0
    if req.type == "stream":
        send_target = await access_stream_for_send(tx, sender, parse_stream_to(req.to))
        target, user_ids = send_target.stream, send_target.subscribers
        recipient_id = await send_target.recipient_id(tx)
        sender_subscribed = sender.id in user_ids
        subscriber_count = len(user_ids)
    else:
        people = await resolve_direct_recipients(tx.conn, sender, parse_direct_to(req.to))
        await check_direct_message_permission(tx.conn, realm, sender, people)
        recipient_id = await direct_recipient_id(tx.conn, sender, people)
        incoming_recipient_id = await incoming_direct_recipient_id(tx.conn, sender, people)
        user_ids = {u.id for u in people}
    user_ids.add(sender.id)

    words = await alert_words_in_realm(tx.conn, realm.id)
    words = {uid: w for uid, w in words.items() if uid in user_ids and uid != sender.id}
    rendered = replace(
        rendering.rendered,
        alert_words=find_alert_words(rendering.rendered, [w for ws in words.values() for w in ws]),
    )
    if target is not None:
        await check_wildcard_mentions(
            tx, realm, sender, rendered, recipient_id, topic, subscriber_count
        )

    # What the message object shows, written here and made into the event's object below
    # (no read-back).
    new = NewMessage(
        recipient_id=recipient_id,
        topic=topic,
        content=content,
        rendered_content=rendered.html,
        date_sent=now,
        sending_client=req.client_name[:30],
        is_me_message=content.startswith("/me "),
    )
    values = {
        **asdict(new),
        "realm_id": realm.id,
        "sender_id": sender.id,
        "rendered_content_version": 1,
        "has_attachment": rendered.has_attachment,
        "has_image": rendered.has_image,
        "has_link": rendered.has_link,
    }
    targets = await get_mention_targets(
        tx,
        realm.id,
        rendered,
        words,
        stream_recipient=(recipient_id, topic) if target is not None else None,
        new_sender_id=sender.id,
    )
    muters = {uid for (uid,) in await fetch_rows(tx.conn, _MUTERS, {"sender_id": sender.id})}
    read_by_sender = (
        default_read_by_sender(req.client_name)
        if req.read_by_sender is None
        else req.read_by_sender
    )
    # Every recipient's bits: what all share, then the few that differ.
    flags = dict.fromkeys(sorted(user_ids), targets.common | (IS_PRIVATE if target is None else 0))
    for uid, value in targets.individual(user_ids).items():
        flags[uid] |= value
    for uid in muters & user_ids:
        # Messages from a muted user arrive read (Zulip 4.0, feature level 48).
        flags[uid] |= READ
    if read_by_sender:
        flags[sender.id] |= READ
    if not sender_subscribed:
        flags[sender.id] |= HISTORICAL
    # The message and its rows; one statement on PostgreSQL.
    message_id = await for_name(tx.conn.dialect.name).insert_message(tx.conn, values, flags)
    await do_update_message_attachments(tx, sender, message_id, content, new=True)
    await enqueue_message_push(
        tx, realm, sender, message_id, flags, is_stream=target is not None, now=now
    )
    if target is not None and target.first_message_id is None:
        await tx.conn.execute(
            sa.update(stream)
            .where(stream.c.id == target.id, stream.c.first_message_id.is_(None))
            .values(first_message_id=message_id)
        )
    item = new_message_dict(
        message_id,
        new,
        sender,
        stream=(target.id, target.name) if target is not None else None,
        people=people,
        realm_str=realm.string_id,
        linkifiers=ctx.linkifiers,
    )
    notify_new_message(
        tx,
        sender,
        item,
        content,
        flags,
        req,
        public_stream=target is not None and not target.invite_only,
        incoming_recipient_id=incoming_recipient_id,
    )
    policy = None
    if target is not None:
        policy = await apply_automatic_policies(
            tx,
            sender,
            target,
            topic,
            message_id,
            recipient_id,
            rendered.mentioned_user_ids,
            user_ids,
            sender_settings=sender_settings,
            now=now,
        )
    return SendResult(message_id, policy)


async def check_wildcard_mentions(
    tx: Tx,
    realm: Realm,
    sender: User,
    rendered: RenderResult,
    recipient_id: int,
    topic: str,
    subscriber_count: int,
) -> None:
    """The realm's ``can_mention_many_users_group`` (feature level 352) for wildcard
    mentions reaching more than ``WILDCARD_MENTION_THRESHOLD`` people (topic wildcards too
    since feature level 229); raises before anything is written."""
    if (
        rendered.mentions_stream_wildcard
        and subscriber_count > WILDCARD_MENTION_THRESHOLD
        and not await user_has_permission(tx.conn, sender, realm, "can_mention_many_users_group")
    ):
        raise StreamWildcardMentionNotAllowedError()
    if rendered.mentions_topic_wildcard:
        audience = len(await topic_participants(tx, recipient_id, topic))
        if audience > WILDCARD_MENTION_THRESHOLD and not await user_has_permission(
            tx.conn, sender, realm, "can_mention_many_users_group"
        ):
            raise TopicWildcardMentionNotAllowedError()


def notify_new_message(
    tx: Tx,
    sender: User,
    item: dict[str, Any],
    raw_content: str,
    flags: dict[int, int],
    req: SendRequest,
    *,
    public_stream: bool,
    incoming_recipient_id: int | None = None,
) -> None:
    """One ``message`` event per distinct flags value. The event carries the rendered
    form; the private mark gives each queue what it registered for (raw Markdown
    without ``apply_markdown``, a null avatar with ``client_gravatar``, and
    ``local_message_id`` for the queue that sent it). ``incoming_recipient_id``: the
    recipient id a 1:1 direct message shows its receiver (feature level 327)."""
    mark: dict[str, Any] = {
        "raw_content": raw_content,
        "gravatar": avatar_url(sender, client_gravatar=True) is None,
        "sender_id": sender.id,
        "queue_id": req.queue_id,
        "local_id": req.local_id,
    }
    by_flags: dict[int, list[int]] = defaultdict(list)
    for uid, value in flags.items():
        by_flags[value].append(uid)
    for value, uids in by_flags.items():
        if incoming_recipient_id is not None and any(u != sender.id for u in uids):
            seen = {**item, "recipient_id": incoming_recipient_id}
            receivers = [u for u in uids if u != sender.id]
            event = {"type": "message", "message": seen, "flags": flag_names(value)}
            tx.notify(sender.realm_id, {**event, MESSAGE_MARK: mark}, receivers)
            uids = [u for u in uids if u == sender.id]
            if not uids:
                continue
        event = {"type": "message", "message": item, "flags": flag_names(value), MESSAGE_MARK: mark}
        tx.notify(sender.realm_id, event, uids)
    if public_stream:
        # Queues registered with ``all_public_streams`` (bots mirroring a whole realm) get
        # every public stream message; a user without a row for it gets no flags, as Zulip.
        event = {"type": "message", "message": item, "flags": [], MESSAGE_MARK: mark}
        tx.notify_public_stream_queues(sender.realm_id, event, flags)
