"""Messages as the Zulip API shows them (``GET /messages``, ``message`` events).

:func:`get_message_dicts` builds Zulip 8.0's message object without ``flags`` (per-user,
added by the caller with any ``match_*`` keys). Rendered HTML is stored at send time, so
a message costs no Markdown work to show; topic links are computed from the realm's
current linkifiers, as Zulip does.
"""

from __future__ import annotations

from collections import defaultdict, namedtuple
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.dialects import PerDialect, ids_argument
from hubbub.db.fast import fetch_rows
from hubbub.db.tables import (
    direct_message_group_member,
    message,
    realm,
    recipient,
    stream,
    user_profile,
)
from hubbub.markdown import Linkifier, RenderContext, topic_links
from hubbub.models import Realm, User
from hubbub.queries.edit_history_visibility import visible_edit_history
from hubbub.queries.edit_timestamps import edit_timestamps, public_entries
from hubbub.queries.linkifiers import render_linkifiers
from hubbub.queries.people import PeopleCache
from hubbub.queries.reactions import get_reaction_dicts, get_submessage_dicts
from hubbub.queries.user_dicts import avatar_url
from hubbub.realm_settings import message_edit_history_policy

# recipient.type values, Zulip's numbering.
RECIPIENT_PERSONAL = 1
RECIPIENT_STREAM = 2
RECIPIENT_DIRECT_MESSAGE_GROUP = 3

# (recipient type, type id, the stream's name or the member user ids)
DisplayRecipient = tuple[int, int, str | list[int]]


def display_person(user: User) -> dict[str, Any]:
    """One member of a direct message's ``display_recipient`` list."""
    return {
        "id": user.id,
        "email": user.email,
        "full_name": user.full_name,
        "is_mirror_dummy": False,
    }


# Built once per dialect: every page of messages runs both.
_USERS = PerDialect(
    lambda dialect: sa.select(user_profile).where(dialect.in_ids(user_profile.c.id, "ids"))
)
_RECIPIENTS = PerDialect(
    lambda dialect: sa.select(recipient.c.id, recipient.c.type, recipient.c.type_id).where(
        dialect.in_ids(recipient.c.id, "ids")
    )
)
_STREAM_NAMES = PerDialect(
    lambda dialect: sa.select(stream.c.id, stream.c.name).where(dialect.in_ids(stream.c.id, "ids"))
)
_MESSAGES = PerDialect(
    lambda dialect: sa.select(message).where(
        dialect.in_ids(message.c.id, "ids"), message.c.realm_id == sa.bindparam("realm_id")
    )
)


# A message row read by attribute, whichever way it was read (``db.fast.fetch_rows``).
MessageRow = namedtuple("MessageRow", [column.name for column in message.c])  # type: ignore[misc]


async def _users_by_id(
    conn: AsyncConnection,
    user_ids: set[int],
    realm_id: int,
    people: PeopleCache,
    version: int | None = None,
) -> dict[int, User]:
    """``user_ids``' users, from the realm's users ``people`` keeps (``version``: the
    realm's people version, when the caller read it). A message names only users of its
    realm; one the kept users lack is still read from its row rather than failing the
    page."""
    kept = await people.users_by_id(conn, realm_id, version=version)
    found = {uid: kept[uid] for uid in user_ids if uid in kept}
    missing = user_ids - found.keys()
    if missing:
        rows = await fetch_rows(conn, _USERS(conn), {"ids": ids_argument(conn, missing)})
        found.update((user.id, user) for user in map(User.from_row, rows))
    return found


async def get_direct_message_group_members(
    conn: AsyncConnection, group_ids: set[int]
) -> dict[int, list[int]]:
    """Direct-message group id -> its members' ids."""
    members: dict[int, list[int]] = defaultdict(list)
    if group_ids:
        for gid, uid in await conn.execute(
            sa.select(
                direct_message_group_member.c.group_id,
                direct_message_group_member.c.user_profile_id,
            ).where(direct_message_group_member.c.group_id.in_(group_ids))
        ):
            members[gid].append(uid)
    return members


async def get_display_recipients(
    conn: AsyncConnection, recipient_ids: set[int]
) -> dict[int, DisplayRecipient]:
    """Per recipient id: (type, type_id, stream name or member user ids).

    A personal recipient (type 1) lists only its user; the caller adds the sender."""
    if not recipient_ids:
        return {}
    params = {"ids": ids_argument(conn, recipient_ids)}
    rows = await fetch_rows(conn, _RECIPIENTS(conn), params)
    stream_ids = {type_id for _id, rtype, type_id in rows if rtype == RECIPIENT_STREAM}
    group_ids = {type_id for _id, rtype, type_id in rows if rtype == RECIPIENT_DIRECT_MESSAGE_GROUP}
    names: dict[int, str] = {}
    if stream_ids:
        params = {"ids": ids_argument(conn, stream_ids)}
        names = {sid: name for sid, name in await fetch_rows(conn, _STREAM_NAMES(conn), params)}
    members = await get_direct_message_group_members(conn, group_ids)
    result: dict[int, DisplayRecipient] = {}
    for rid, rtype, type_id in rows:
        if rtype == RECIPIENT_STREAM:
            result[rid] = (rtype, type_id, names.get(type_id, ""))
        elif rtype == RECIPIENT_DIRECT_MESSAGE_GROUP:
            result[rid] = (rtype, type_id, sorted(members[type_id]))
        else:
            result[rid] = (rtype, type_id, [type_id])
    return result


@dataclass(frozen=True)
class ReadAlong:
    """What a caller read in the statement that gave it its message rows, which
    :func:`message_dicts_of_rows` then does not read again."""

    # The rows' display recipients, by recipient id (None: not read).
    recipients: Mapping[int, DisplayRecipient] | None = None
    # The realm's people version (``queries/people.py``; None: not read).
    people_version: int | None = None
    # Whether the realm has linkifiers (None: not read).
    has_linkifiers: bool | None = None
    # Messages the caller found to have no reactions, or no submessages.
    without_reactions: frozenset[int] = frozenset()
    without_submessages: frozenset[int] = frozenset()


NOTHING_ALONG = ReadAlong()


@dataclass(frozen=True)
class NewMessage:
    """The columns of a message row that its dictionary shows, for a message just sent:
    the sender builds its event from what it wrote rather than reading it back."""

    recipient_id: int
    topic: str
    content: str
    rendered_content: str
    date_sent: float
    sending_client: str
    is_me_message: bool


def _message_dict(
    message_id: int,
    row: Any,
    sender: User,
    recipient: DisplayRecipient,
    users: Mapping[int, User],
    *,
    apply_markdown: bool,
    client_gravatar: bool,
    realm_str: str,
    link_ctx: RenderContext | None,
    reactions: list[dict[str, Any]],
    submessages: list[dict[str, Any]],
) -> dict[str, Any]:
    """One message object (without ``flags`` and edit history) from a message row or a
    :class:`NewMessage`; ``link_ctx`` holds the realm's linkifiers (None: it has none)."""
    rtype, type_id, target = recipient
    if apply_markdown:
        content = row.rendered_content if row.rendered_content is not None else ""
    else:
        content = row.content
    item: dict[str, Any] = {
        "avatar_url": avatar_url(sender, client_gravatar=client_gravatar),
        "client": row.sending_client,
        "content": content,
        "content_type": "text/html" if apply_markdown else "text/x-markdown",
        "id": message_id,
        "is_me_message": row.is_me_message,
        "reactions": reactions,
        "recipient_id": row.recipient_id,
        "sender_email": sender.email,
        "sender_full_name": sender.full_name,
        "sender_id": sender.id,
        "sender_realm_str": realm_str,
        "subject": row.topic,
        "submessages": submessages,
        "timestamp": int(row.date_sent),
        "topic_links": topic_links(row.topic, link_ctx) if link_ctx is not None else [],
    }
    if rtype == RECIPIENT_STREAM:
        item["type"] = "stream"
        item["display_recipient"] = target
        item["stream_id"] = type_id
    else:
        assert isinstance(target, list)
        member_ids = set(target)
        if rtype == RECIPIENT_PERSONAL:
            member_ids.add(sender.id)
        item["type"] = "private"
        item["display_recipient"] = [display_person(users[uid]) for uid in sorted(member_ids)]
    return item


def _link_context(linkifiers: list[Linkifier]) -> RenderContext | None:
    return RenderContext(linkifiers=linkifiers) if linkifiers else None


def new_message_dict(
    message_id: int,
    new: NewMessage,
    sender: User,
    *,
    stream: tuple[int, str] | None,
    people: list[User],
    realm_str: str,
    linkifiers: list[Linkifier],
) -> dict[str, Any]:
    """The message object of a message sent in this transaction, as
    :func:`get_message_dicts` would read it back: to ``stream`` (id, name), or directly
    to ``people`` (the sender among them or not). It has no reactions or submessages
    yet, and no query is needed."""
    users = {user.id: user for user in people}
    users[sender.id] = sender
    recipient: DisplayRecipient = (
        (RECIPIENT_STREAM, stream[0], stream[1])
        if stream is not None
        # Every member, the sender included: what a group's member list shows.
        else (RECIPIENT_DIRECT_MESSAGE_GROUP, 0, sorted(users))
    )
    return _message_dict(
        message_id,
        new,
        sender,
        recipient,
        users,
        apply_markdown=True,
        client_gravatar=False,
        realm_str=realm_str,
        link_ctx=_link_context(linkifiers),
        reactions=[],
        submessages=[],
    )


async def _incoming_personal_recipients(
    conn: AsyncConnection,
    viewer: User,
    rows: list[Any],
    recipients: Mapping[int, DisplayRecipient],
) -> dict[int, int]:
    """Message id -> the recipient id the viewer sees, for 1:1 direct messages the viewer
    received from someone else. Such a message is stored with the viewer's own personal
    recipient; since feature level 327 it shows the sender's, the one the viewer's own
    messages in that conversation carry. A sender without a personal recipient row (no
    one has written to them yet) leaves the stored one."""
    senders: dict[int, list[int]] = defaultdict(list)
    for row in rows:
        rtype, type_id, _target = recipients[row.recipient_id]
        if rtype == RECIPIENT_PERSONAL and type_id == viewer.id and row.sender_id != viewer.id:
            senders[row.sender_id].append(row.id)
    if not senders:
        return {}
    found = await conn.execute(
        sa.select(recipient.c.id, recipient.c.type_id).where(
            recipient.c.type == RECIPIENT_PERSONAL, recipient.c.type_id.in_(sorted(senders))
        )
    )
    return {mid: int(rid) for rid, sender_id in found for mid in senders[int(sender_id)]}


async def get_message_dicts(
    conn: AsyncConnection,
    viewer: User,
    message_ids: list[int],
    *,
    apply_markdown: bool,
    client_gravatar: bool,
    people: PeopleCache,
    realm_str: str | None = None,
) -> dict[int, dict[str, Any]]:
    """Zulip 8.0 message objects (without ``flags``) for the ids that exist in the
    viewer's realm. The caller checks that the viewer may read them. ``realm_str`` (the
    viewer's realm's subdomain), when the caller has it, saves a query. The users named
    come from ``people`` (the process's kept users, ``Services.people``)."""
    if not message_ids:
        return {}
    params = {"ids": ids_argument(conn, message_ids), "realm_id": viewer.realm_id}
    rows = [MessageRow(*row) for row in await fetch_rows(conn, _MESSAGES(conn), params)]
    return await message_dicts_of_rows(
        conn,
        viewer,
        rows,
        apply_markdown=apply_markdown,
        client_gravatar=client_gravatar,
        people=people,
        realm_str=realm_str,
    )


async def message_dicts_of_rows(
    conn: AsyncConnection,
    viewer: User,
    rows: list[Any],
    *,
    apply_markdown: bool,
    client_gravatar: bool,
    people: PeopleCache,
    realm_str: str | None = None,
    along: ReadAlong = NOTHING_ALONG,
) -> dict[int, dict[str, Any]]:
    """:func:`get_message_dicts` of message rows the caller has read (``MessageRow``s of
    the viewer's realm), with what it read ``along`` with them."""
    if not rows:
        return {}
    recipients = along.recipients
    if recipients is None:
        recipients = await get_display_recipients(conn, {r.recipient_id for r in rows})
    user_ids = {r.sender_id for r in rows}
    for _type, _type_id, members in recipients.values():
        if isinstance(members, list):
            user_ids.update(members)
    users = await _users_by_id(conn, user_ids, viewer.realm_id, people, along.people_version)
    if realm_str is None:
        realm_str = (
            await conn.execute(sa.select(realm.c.string_id).where(realm.c.id == viewer.realm_id))
        ).scalar_one()
    linkifiers = (
        await render_linkifiers(conn, viewer.realm_id) if along.has_linkifiers is not False else []
    )
    link_ctx = _link_context(linkifiers)
    found_ids = [r.id for r in rows]
    reactions = await get_reaction_dicts(
        conn, [i for i in found_ids if i not in along.without_reactions]
    )
    submessages = await get_submessage_dicts(
        conn, [i for i in found_ids if i not in along.without_submessages]
    )
    incoming = await _incoming_personal_recipients(conn, viewer, rows, recipients)
    result: dict[int, dict[str, Any]] = {}
    # The realm's message_edit_history_visibility_policy, read on the first edited message.
    history_policy: str | None = None
    for row in rows:
        item = _message_dict(
            row.id,
            row,
            users[row.sender_id],
            recipients[row.recipient_id],
            users,
            apply_markdown=apply_markdown,
            client_gravatar=client_gravatar,
            realm_str=realm_str,
            link_ctx=link_ctx,
            reactions=reactions.get(row.id, []),
            submessages=submessages.get(row.id, []),
        )
        if row.edit_history:
            entries: list[dict[str, Any]] = orjson.loads(row.edit_history)
            # Content edits and moves apart since feature level 365, whatever the realm
            # lets its members see of the history itself.
            edited, moved = edit_timestamps(entries)
            if edited is not None:
                item["last_edit_timestamp"] = edited
            if moved is not None:
                item["last_moved_timestamp"] = moved
            if history_policy is None:
                query = sa.select(realm).where(realm.c.id == viewer.realm_id)
                found = Realm.from_row((await conn.execute(query)).one())
                history_policy = message_edit_history_policy(found)
            # Zulip leaves the history out where the realm hides it, and keeps only the
            # moves under "moves" (feature level 358).
            if history_policy != "none":
                item["edit_history"] = visible_edit_history(history_policy, public_entries(entries))
        elif row.last_edit_time is not None:
            # An edit with no history entry (none is ever written without one): the
            # time is all there is to show.
            item["last_edit_timestamp"] = int(row.last_edit_time)
        if row.id in incoming:
            item["recipient_id"] = incoming[row.id]
        result[row.id] = item
    return result
