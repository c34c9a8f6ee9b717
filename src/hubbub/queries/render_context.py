"""Loading what the Markdown renderer needs for one realm and sender (the renderer itself
never touches the database)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.dialects import PerDialect, ids_argument
from hubbub.db.fast import fetch_rows
from hubbub.db.tables import user_group, user_profile
from hubbub.markdown import (
    LinkableStream,
    Linkifier,
    MentionableGroup,
    MentionableUser,
    RealmEmoji,
    RenderContext,
)
from hubbub.markdown.avatars import possible_avatar_emails
from hubbub.markdown.channel_links import channel_link_targets
from hubbub.markdown.emoji import EMOJI_NAME_RE
from hubbub.markdown.mentions import may_mention_groups, user_mention_targets
from hubbub.models import Realm, User
from hubbub.queries.image_attachments import get_upload_previews
from hubbub.queries.linkable_channels import get_linkable_channels, get_topic_link_message_ids
from hubbub.queries.linkifiers import render_linkifiers
from hubbub.queries.realm_emoji import active_render_emoji
from hubbub.queries.user_settings import get_json_user_settings

_USER_COLUMNS = (
    user_profile.c.id,
    user_profile.c.full_name,
    user_profile.c.email,
    user_profile.c.is_active,
)
_ALL_USERS = (
    sa.select(*_USER_COLUMNS)
    .where(user_profile.c.realm_id == sa.bindparam("realm_id"))
    .order_by(user_profile.c.id)
)
# The users a message's mentions can name (``user_mention_targets``): by id, or by a
# name equal to one of them ignoring case. ``lower()`` is the database's: ASCII letters
# only on SQLite, so a name is looked up this way only when it is ASCII, and a stored
# name with the one non-ASCII character whose lower case is ASCII (U+212A KELVIN SIGN,
# "k") is always read: the rows are then a superset of the ones the renderer's own
# ``str.lower`` match picks.
_NAMED_USERS = PerDialect(
    lambda dialect: (
        sa.select(*_USER_COLUMNS)
        .where(
            user_profile.c.realm_id == sa.bindparam("realm_id"),
            sa.or_(
                dialect.in_ids(user_profile.c.id, "ids"),
                dialect.in_ids(sa.func.lower(user_profile.c.full_name, type_=sa.String), "names"),
                dialect.in_ids(sa.func.lower(user_profile.c.email, type_=sa.String), "emails"),
                user_profile.c.full_name.contains("\u212a"),
            ),
        )
        .order_by(user_profile.c.id)
    )
)


async def _mentionable_users(
    conn: AsyncConnection, realm_id: int, content: str | None
) -> list[MentionableUser]:
    """The realm's users, in id order (the first of two with one name wins a mention),
    or, given the ``content`` to render, those its mentions can name: reading every user
    of a big realm for each send with a mention cost more than rendering it."""
    targets = user_mention_targets(content) if content is not None else None
    if targets is None or content is None:
        rows = await fetch_rows(conn, _ALL_USERS, {"realm_id": realm_id})
    else:
        ids, names = targets
        # ``!avatar(email)`` names its user by API email (the id goes into the URL).
        emails = sorted(possible_avatar_emails(content)) if "!" in content else []
        if not ids and not names and not emails:
            return []
        params = {
            "realm_id": realm_id,
            "ids": ids_argument(conn, ids),
            "names": ids_argument(conn, names),
            "emails": ids_argument(conn, emails),
        }
        rows = await fetch_rows(conn, _NAMED_USERS(conn), params)
    return [
        MentionableUser(id=id, full_name=full_name, email=email, is_active=bool(is_active))
        for id, full_name, email, is_active in rows
    ]


@dataclass(frozen=True)
class _RealmParts:
    """What any rendering in a realm can refer to, whoever writes."""

    users: list[MentionableUser]
    groups: list[MentionableGroup]
    streams: list[LinkableStream]
    linkifiers: list[Linkifier]
    realm_emoji: list[RealmEmoji]
    topic_link_message_ids: dict[tuple[str, str], int]


async def _linkable_streams(
    conn: AsyncConnection, realm_id: int, content: str | None, writer: User | None
) -> tuple[list[LinkableStream], dict[tuple[str, str], int]]:
    """The channels the links of ``content`` name that ``writer`` may read, and the
    messages its topic links name (``queries.linkable_channels``); with no content,
    every channel the writer may read, and no topic."""
    if content is None:
        channels = await get_linkable_channels(conn, realm_id, None, writer)
        topics: set[tuple[str, str]] = set()
    elif "#**" not in content:
        return [], {}
    else:
        names, topics = channel_link_targets(content)
        channels = await get_linkable_channels(conn, realm_id, names, writer)
    message_ids = await get_topic_link_message_ids(conn, channels, topics, writer)
    return [LinkableStream(id=c.stream.id, name=c.stream.name) for c in channels], message_ids


async def _load_realm_parts(
    conn: AsyncConnection, realm_id: int, content: str | None, writer: User | None
) -> _RealmParts:
    """Given the ``content`` to render, only what its syntax can refer to is loaded: the
    users its user mentions can name (``_mentionable_users``), groups only for a group
    mention ("@*..."), the channels its links name ("#**...", ``_linkable_streams``),
    custom emoji only for some ":name:" (one read, however many it names)."""
    users = await _mentionable_users(conn, realm_id, content)
    # Zulip 8.0 does not let messages mention system groups ("role:members" ...).
    groups = (
        []
        if content is not None and not may_mention_groups(content)
        else [
            MentionableGroup(id=r.id, name=r.name)
            for r in await conn.execute(
                sa.select(user_group.c.id, user_group.c.name).where(
                    user_group.c.realm_id == realm_id,
                    ~user_group.c.is_system_group,
                    # Deactivated groups cannot be mentioned (feature level 290).
                    ~user_group.c.deactivated,
                )
            )
        ]
    )
    streams, topic_link_message_ids = await _linkable_streams(conn, realm_id, content, writer)
    linkifiers = await render_linkifiers(conn, realm_id)
    realm_emoji = (
        await active_render_emoji(conn, realm_id)
        if content is None or EMOJI_NAME_RE.search(content)
        else []
    )
    return _RealmParts(users, groups, streams, linkifiers, realm_emoji, topic_link_message_ids)


async def load_render_context(
    conn: AsyncConnection,
    realm: Realm,
    sender: User,
    *,
    realm_url: str = "",
    alert_words: Iterable[str] = (),
    content: str | None = None,
    sender_settings: dict[str, Any] | None = None,
) -> RenderContext:
    """The realm's users, mentionable groups, the channels the sender may read,
    linkifiers and active custom emoji, with the sender's emoticon setting.
    ``alert_words`` are every recipient's words together; the caller matches each
    recipient's own words against the result.

    Given the ``content`` to render, only what its syntax can refer to is loaded
    (``_load_realm_parts``): in a big realm the user list alone was a large part of a
    send's time. ``sender_settings`` (``get_json_user_settings``), when the caller has
    them, save a query."""
    parts = await _load_realm_parts(conn, realm.id, content, sender)
    # The stored settings suffice (one statement): the emoticon setting is not a column.
    settings = sender_settings
    if settings is None:
        settings = await get_json_user_settings(conn, sender.id)
    return RenderContext(
        realm_url=realm_url,
        users=parts.users,
        user_groups=parts.groups,
        streams=parts.streams,
        linkifiers=parts.linkifiers,
        realm_emoji=parts.realm_emoji,
        alert_words=sorted(set(alert_words)),
        translate_emoticons=bool(settings.get("translate_emoticons", False)),
        inline_image_preview=bool(realm.setting("inline_image_preview")),
        upload_previews=await get_upload_previews(conn, realm.id, content),
        topic_link_message_ids=parts.topic_link_message_ids,
    )


async def load_text_render_context(
    conn: AsyncConnection,
    realm_id: int,
    content: str,
    *,
    realm_url: str = "",
    acting_user: User | None = None,
) -> RenderContext:
    """What a channel description, the organization description or a profile field value
    renders with: Zulip 10.2 renders them as a message of the realm with no message and
    no previews, so mentions, channel links, linkifiers and custom emoji work, while
    image and link previews, alert words and the emoticon translation (a sender's
    setting) do not apply.

    Given the ``acting_user`` who writes the text (a channel description's editor), only
    channels whose messages that user may read are linked, as Zulip does: a description
    links no channel its writer could not open. Without one (profile values, the
    organization description, as in Zulip) every channel of the realm is."""
    parts = await _load_realm_parts(conn, realm_id, content, acting_user)
    return RenderContext(
        realm_url=realm_url,
        users=parts.users,
        user_groups=parts.groups,
        streams=parts.streams,
        linkifiers=parts.linkifiers,
        realm_emoji=parts.realm_emoji,
        inline_image_preview=False,
        topic_link_message_ids=parts.topic_link_message_ids,
    )
