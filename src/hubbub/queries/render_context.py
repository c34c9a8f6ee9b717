"""Loading what the Markdown renderer needs for one realm and sender (the renderer itself
never touches the database)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import stream, user_group, user_profile
from hubbub.markdown import (
    LinkableStream,
    MentionableGroup,
    MentionableUser,
    RenderContext,
)
from hubbub.models import Realm, User
from hubbub.queries.linkifiers import render_linkifiers
from hubbub.queries.user_settings import get_json_user_settings


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
    """The realm's users, mentionable groups, active streams and linkifiers, with the
    sender's emoticon setting. ``alert_words`` are every recipient's words together; the
    caller matches each recipient's own words against the result.

    Given the ``content`` to render, only what its syntax can refer to is loaded: users and
    groups are needed only for mentions (which all contain "@"), streams only for stream
    links ("#**..."). On a 1,000-user realm the user list alone was a fifth of a send's
    time (bench/README.md). ``sender_settings`` (``get_json_user_settings``), when the
    caller has them, save a query."""
    mentions = content is None or "@" in content
    stream_links = content is None or "#" in content
    users = (
        []
        if not mentions
        else [
            MentionableUser(id=r.id, full_name=r.full_name, email=r.email, is_active=r.is_active)
            for r in await conn.execute(
                sa.select(
                    user_profile.c.id,
                    user_profile.c.full_name,
                    user_profile.c.email,
                    user_profile.c.is_active,
                )
                .where(user_profile.c.realm_id == realm.id)
                .order_by(user_profile.c.id)
            )
        ]
    )
    # Zulip 8.0 does not let messages mention system groups ("role:members" ...).
    groups = (
        []
        if not mentions
        else [
            MentionableGroup(id=r.id, name=r.name)
            for r in await conn.execute(
                sa.select(user_group.c.id, user_group.c.name).where(
                    user_group.c.realm_id == realm.id, ~user_group.c.is_system_group
                )
            )
        ]
    )
    streams = (
        []
        if not stream_links
        else [
            LinkableStream(id=r.id, name=r.name)
            for r in await conn.execute(
                sa.select(stream.c.id, stream.c.name).where(
                    stream.c.realm_id == realm.id, ~stream.c.deactivated
                )
            )
        ]
    )
    linkifiers = await render_linkifiers(conn, realm.id)
    # The stored settings suffice (one statement): the emoticon setting is not a column.
    settings = sender_settings
    if settings is None:
        settings = await get_json_user_settings(conn, sender.id)
    return RenderContext(
        realm_url=realm_url,
        users=users,
        user_groups=groups,
        streams=streams,
        linkifiers=linkifiers,
        alert_words=sorted(set(alert_words)),
        translate_emoticons=bool(settings.get("translate_emoticons", False)),
        inline_image_preview=bool(realm.setting("inline_image_preview")),
    )
