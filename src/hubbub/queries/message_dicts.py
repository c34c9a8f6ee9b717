"""Messages as the Zulip API shows them (``GET /messages``, ``message`` events).

:func:`get_message_dicts` builds Zulip 8.0's message object without ``flags`` (per-user,
added by the caller with any ``match_*`` keys). Rendered HTML is stored at send time, so
a message costs no Markdown work to show; topic links are computed from the realm's
current linkifiers, as Zulip does.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.dialects import for_name
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
from hubbub.queries.linkifiers import render_linkifiers
from hubbub.queries.reactions import get_reaction_dicts, get_submessage_dicts
from hubbub.queries.user_dicts import avatar_url

# recipient.type values, Zulip's numbering.
RECIPIENT_PERSONAL = 1
RECIPIENT_STREAM = 2
RECIPIENT_DIRECT_MESSAGE_GROUP = 3


def display_person(user: User) -> dict[str, Any]:
    """One member of a direct message's ``display_recipient`` list."""
    return {
        "id": user.id,
        "email": user.email,
        "full_name": user.full_name,
        "is_mirror_dummy": False,
    }


async def _users_by_id(conn: AsyncConnection, user_ids: set[int]) -> dict[int, User]:
    if not user_ids:
        return {}
    rows = await conn.execute(
        sa.select(user_profile).where(
            for_name(conn.dialect.name).in_ids(user_profile.c.id, user_ids)
        )
    )
    return {row.id: User.from_row(row) for row in rows}


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
) -> dict[int, tuple[int, int, str | list[int]]]:
    """Per recipient id: (type, type_id, stream name or member user ids).

    A personal recipient (type 1) lists only its user; the caller adds the sender."""
    if not recipient_ids:
        return {}
    rows = list(
        await conn.execute(
            sa.select(recipient.c.id, recipient.c.type, recipient.c.type_id).where(
                recipient.c.id.in_(recipient_ids)
            )
        )
    )
    stream_ids = {r.type_id for r in rows if r.type == RECIPIENT_STREAM}
    group_ids = {r.type_id for r in rows if r.type == RECIPIENT_DIRECT_MESSAGE_GROUP}
    names: dict[int, str] = {}
    if stream_ids:
        names = {
            s.id: s.name
            for s in await conn.execute(
                sa.select(stream.c.id, stream.c.name).where(stream.c.id.in_(stream_ids))
            )
        }
    members = await get_direct_message_group_members(conn, group_ids)
    result: dict[int, tuple[int, int, str | list[int]]] = {}
    for r in rows:
        if r.type == RECIPIENT_STREAM:
            result[r.id] = (r.type, r.type_id, names.get(r.type_id, ""))
        elif r.type == RECIPIENT_DIRECT_MESSAGE_GROUP:
            result[r.id] = (r.type, r.type_id, sorted(members[r.type_id]))
        else:
            result[r.id] = (r.type, r.type_id, [r.type_id])
    return result


async def get_message_dicts(
    conn: AsyncConnection,
    viewer: User,
    message_ids: list[int],
    *,
    apply_markdown: bool,
    client_gravatar: bool,
    just_sent: bool = False,
    realm_str: str | None = None,
    linkifiers: list[Linkifier] | None = None,
) -> dict[int, dict[str, Any]]:
    """Zulip 8.0 message objects (without ``flags``) for the ids that exist in the
    viewer's realm. The caller checks that the viewer may read them. ``just_sent``: the
    messages were sent in this transaction, so they have no reactions or submessages yet
    (two queries fewer on the send path). ``realm_str`` (the viewer's realm's subdomain)
    and ``linkifiers`` (the realm's), when the caller has them, save a query each."""
    if not message_ids:
        return {}
    rows = list(
        await conn.execute(
            sa.select(message).where(
                for_name(conn.dialect.name).in_ids(message.c.id, message_ids),
                message.c.realm_id == viewer.realm_id,
            )
        )
    )
    if not rows:
        return {}
    recipients = await get_display_recipients(conn, {r.recipient_id for r in rows})
    user_ids = {r.sender_id for r in rows}
    for _type, _type_id, members in recipients.values():
        if isinstance(members, list):
            user_ids.update(members)
    users = await _users_by_id(conn, user_ids)
    if realm_str is None:
        realm_str = (
            await conn.execute(sa.select(realm.c.string_id).where(realm.c.id == viewer.realm_id))
        ).scalar_one()
    if linkifiers is None:
        linkifiers = await render_linkifiers(conn, viewer.realm_id)
    link_ctx = RenderContext(linkifiers=linkifiers)
    found_ids = [r.id for r in rows]
    reactions = {} if just_sent else await get_reaction_dicts(conn, found_ids)
    submessages = {} if just_sent else await get_submessage_dicts(conn, found_ids)
    result: dict[int, dict[str, Any]] = {}
    # The realm's allow_edit_history, read on the first edited message.
    history_shown: bool | None = None
    for row in rows:
        sender = users[row.sender_id]
        rtype, type_id, target = recipients[row.recipient_id]
        if apply_markdown:
            content = row.rendered_content if row.rendered_content is not None else ""
        else:
            content = row.content
        item: dict[str, Any] = {
            "avatar_url": avatar_url(sender, client_gravatar=client_gravatar),
            "client": row.sending_client,
            "content": content,
            "content_type": "text/html" if apply_markdown else "text/x-markdown",
            "id": row.id,
            "is_me_message": row.is_me_message,
            "reactions": reactions.get(row.id, []),
            "recipient_id": row.recipient_id,
            "sender_email": sender.email,
            "sender_full_name": sender.full_name,
            "sender_id": sender.id,
            "sender_realm_str": realm_str,
            "subject": row.topic,
            "submessages": submessages.get(row.id, []),
            "timestamp": int(row.date_sent),
            "topic_links": topic_links(row.topic, link_ctx) if linkifiers else [],
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
        if row.last_edit_time is not None:
            item["last_edit_timestamp"] = int(row.last_edit_time)
            if row.edit_history and history_shown is None:
                query = sa.select(realm).where(realm.c.id == viewer.realm_id)
                found = Realm.from_row((await conn.execute(query)).one())
                history_shown = bool(found.setting("allow_edit_history"))
            # Zulip leaves the history out where the realm hides it.
            if row.edit_history and history_shown:
                item["edit_history"] = orjson.loads(row.edit_history)
        result[row.id] = item
    return result
