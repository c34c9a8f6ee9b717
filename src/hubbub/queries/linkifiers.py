"""A realm's linkifiers: regular expressions whose matches in messages and topics become
links, applied in the realm's order (``PATCH /realm/linkifiers``, feature level 202)."""

from __future__ import annotations

from typing import Any, TypedDict

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.fast import fetch_rows
from hubbub.db.tables import realm_linkifier
from hubbub.errors import JsonableError
from hubbub.markdown.context import Linkifier


class LinkifierDict(TypedDict):
    """One linkifier as the API shows it (``url_template`` since feature level 176)."""

    pattern: str
    url_template: str
    id: int


# Built once: every send and every page of messages reads it.
_REALM_LINKIFIERS = (
    sa.select(realm_linkifier.c.id, realm_linkifier.c.pattern, realm_linkifier.c.url_template)
    .where(realm_linkifier.c.realm_id == sa.bindparam("realm_id"))
    .order_by(realm_linkifier.c.order, realm_linkifier.c.id)
)


async def linkifiers_for_realm(conn: AsyncConnection, realm_id: int) -> list[LinkifierDict]:
    """The realm's linkifiers in the order they apply. Ties in ``order`` (which Zulip
    allows) fall back to creation order."""
    rows = await fetch_rows(conn, _REALM_LINKIFIERS, {"realm_id": realm_id})
    return [
        LinkifierDict(pattern=pattern, url_template=url_template, id=linkifier_id)
        for linkifier_id, pattern, url_template in rows
    ]


async def render_linkifiers(conn: AsyncConnection, realm_id: int) -> list[Linkifier]:
    """The realm's linkifiers, in order, as the Markdown renderer takes them."""
    return [
        Linkifier(id=lk["id"], pattern=lk["pattern"], url_template=lk["url_template"])
        for lk in await linkifiers_for_realm(conn, realm_id)
    ]


async def get_linkifier(conn: AsyncConnection, realm_id: int, linkifier_id: int) -> Any | None:
    return (
        await conn.execute(
            sa.select(realm_linkifier).where(
                realm_linkifier.c.realm_id == realm_id, realm_linkifier.c.id == linkifier_id
            )
        )
    ).first()


async def access_linkifier(conn: AsyncConnection, realm_id: int, linkifier_id: int) -> Any:
    """The realm's linkifier with this id; one of another realm does not exist here."""
    row = await get_linkifier(conn, realm_id, linkifier_id)
    if row is None:
        raise JsonableError("Linkifier not found.")
    return row


async def pattern_in_use(
    conn: AsyncConnection, realm_id: int, pattern: str, *, except_id: int | None = None
) -> bool:
    """Whether another linkifier of the realm has exactly this pattern (the unique key)."""
    query = sa.select(realm_linkifier.c.id).where(
        realm_linkifier.c.realm_id == realm_id, realm_linkifier.c.pattern == pattern
    )
    if except_id is not None:
        query = query.where(realm_linkifier.c.id != except_id)
    return (await conn.execute(query.limit(1))).first() is not None


async def next_linkifier_order(conn: AsyncConnection, realm_id: int) -> int:
    """New linkifiers apply last."""
    highest = (
        await conn.execute(
            sa.select(sa.func.max(realm_linkifier.c.order)).where(
                realm_linkifier.c.realm_id == realm_id
            )
        )
    ).scalar()
    return 0 if highest is None else int(highest) + 1
