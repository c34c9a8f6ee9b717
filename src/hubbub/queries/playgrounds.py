"""A realm's code playgrounds: external sites that a code block of a given Pygments
language can be opened in, each a URL template with one ``code`` variable (feature
level 196)."""

from __future__ import annotations

from typing import Any, TypedDict

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.fast import fetch_rows
from hubbub.db.tables import realm_playground
from hubbub.errors import JsonableError


class PlaygroundDict(TypedDict):
    """One playground as ``/register`` and the ``realm_playgrounds`` event show it."""

    id: int
    name: str
    pygments_language: str
    url_template: str


# Built once: every /register that asks for playgrounds reads it.
_REALM_PLAYGROUNDS = (
    sa.select(
        realm_playground.c.id,
        realm_playground.c.name,
        realm_playground.c.pygments_language,
        realm_playground.c.url_template,
    )
    .where(realm_playground.c.realm_id == sa.bindparam("realm_id"))
    .order_by(realm_playground.c.id)
)


async def playgrounds_for_realm(conn: AsyncConnection, realm_id: int) -> list[PlaygroundDict]:
    """The realm's playgrounds in the order they were added."""
    rows = await fetch_rows(conn, _REALM_PLAYGROUNDS, {"realm_id": realm_id})
    return [
        PlaygroundDict(id=pid, name=name, pygments_language=language, url_template=template)
        for pid, name, language, template in rows
    ]


async def get_playground(conn: AsyncConnection, realm_id: int, playground_id: int) -> Any | None:
    return (
        await conn.execute(
            sa.select(realm_playground).where(
                realm_playground.c.realm_id == realm_id, realm_playground.c.id == playground_id
            )
        )
    ).first()


async def access_playground(conn: AsyncConnection, realm_id: int, playground_id: int) -> Any:
    """The realm's playground with this id; one of another realm does not exist here."""
    row = await get_playground(conn, realm_id, playground_id)
    if row is None:
        raise JsonableError("Invalid playground")
    return row


async def playground_in_use(
    conn: AsyncConnection, realm_id: int, pygments_language: str, name: str
) -> bool:
    """Whether the realm has a playground of this name for this language (the unique key;
    both compared exactly)."""
    query = sa.select(realm_playground.c.id).where(
        realm_playground.c.realm_id == realm_id,
        realm_playground.c.pygments_language == pygments_language,
        realm_playground.c.name == name,
    )
    return (await conn.execute(query.limit(1))).first() is not None
