"""Creating realms (organizations)."""

from __future__ import annotations

import re

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.user_groups import do_create_system_groups
from hubbub.db.tables import realm as realm_table
from hubbub.errors import JsonableError
from hubbub.models import Realm
from hubbub.queries.realms import get_realm_by_id, get_realm_by_subdomain
from hubbub.text_checks import check_printable

MAX_REALM_NAME_LENGTH = 40
# Zulip's subdomain rule: lowercase letters, digits and inner hyphens, at most 40 characters.
_SUBDOMAIN_RE = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?)?$")


def check_subdomain(subdomain: str) -> str:
    if not _SUBDOMAIN_RE.match(subdomain):
        raise JsonableError(
            "Subdomains can only have lowercase letters, numbers, and '-'s, "
            "and must not start or end with '-'."
        )
    return subdomain


def check_realm_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise JsonableError("Organization name can't be empty.")
    if len(name) > MAX_REALM_NAME_LENGTH:
        raise JsonableError(
            f"Organization name is too long (limit: {MAX_REALM_NAME_LENGTH} characters)"
        )
    # Shown in every client's title bar and in emails: no escape sequences.
    check_printable(name, "organization name")
    return name


async def check_create_realm(
    conn: AsyncConnection, *, subdomain: str, name: str, now: float
) -> Realm:
    subdomain = check_subdomain(subdomain)
    name = check_realm_name(name)
    if await get_realm_by_subdomain(conn, subdomain) is not None:
        raise JsonableError(f"Subdomain {subdomain!r} is already in use")
    return await do_create_realm(conn, subdomain=subdomain, name=name, now=now)


async def do_create_realm(conn: AsyncConnection, *, subdomain: str, name: str, now: float) -> Realm:
    result = await conn.execute(
        sa.insert(realm_table).values(string_id=subdomain, name=name, date_created=now)
    )
    realm_id = result.inserted_primary_key[0]  # type: ignore[index]
    await do_create_system_groups(conn, realm_id)
    realm = await get_realm_by_id(conn, realm_id)
    assert realm is not None
    return realm
