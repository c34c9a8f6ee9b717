"""Who a new message goes to: parsing ``to``, finding the stream or users, and the
``recipient`` rows (made on first use) that messages point at."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import orjson
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import (
    direct_message_group,
    direct_message_group_member,
    recipient,
    user_profile,
)
from hubbub.errors import JsonableError
from hubbub.json_values import load_json
from hubbub.models import User
from hubbub.queries.message_dicts import (
    RECIPIENT_DIRECT_MESSAGE_GROUP,
    RECIPIENT_PERSONAL,
    RECIPIENT_STREAM,
)


def parse_stream_to(raw: str) -> int | str:
    """A stream message's ``to``: a stream id, a name, or a one-element JSON list of
    either (the legacy form the Python client still sends)."""
    try:
        value = load_json("to", raw)
    except orjson.JSONDecodeError:
        return raw
    if isinstance(value, list):
        if len(value) != 1:
            raise JsonableError("Expected exactly one stream")
        value = value[0]
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise JsonableError("Invalid data type for stream")


def parse_direct_to(raw: str) -> list[int] | list[str]:
    """A direct message's ``to``: a JSON list of user ids or of emails, or (legacy) a
    comma-separated string of emails."""
    try:
        value = load_json("to", raw)
    except orjson.JSONDecodeError:
        value = raw
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list):
        raise JsonableError("Invalid data type for recipients")
    if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(dict.fromkeys(value))
    if all(isinstance(v, str) for v in value):
        return list(dict.fromkeys(v.strip() for v in value if v.strip()))
    if all(isinstance(v, int | str) and not isinstance(v, bool) for v in value):
        raise JsonableError("Recipient lists may contain emails or user IDs, but not both.")
    raise JsonableError("Invalid data type for recipients")


async def resolve_direct_recipients(
    conn: AsyncConnection, sender: User, to: Sequence[int] | Sequence[str]
) -> list[User]:
    """The recipients' users (not including the sender unless named), in request order."""
    found: list[User] = []
    for item in to:
        if isinstance(item, int):
            row = (
                await conn.execute(
                    sa.select(user_profile).where(
                        user_profile.c.id == item, user_profile.c.realm_id == sender.realm_id
                    )
                )
            ).first()
            if row is None:
                raise JsonableError(f"Invalid user ID {item}")
        else:
            row = (
                await conn.execute(
                    # The API email only: a hidden real address must not reveal a user.
                    sa.select(user_profile).where(
                        user_profile.c.realm_id == sender.realm_id,
                        sa.func.lower(user_profile.c.email) == item.lower(),
                    )
                )
            ).first()
            if row is None:
                raise JsonableError(f"Invalid email '{item}'")
        user = User.from_row(row)
        if not user.is_active:
            raise JsonableError(f"'{user.email}' is no longer using Zulip.")
        if all(u.id != user.id for u in found):
            found.append(user)
    if not found:
        raise JsonableError("Message must have recipients")
    return found


_RECIPIENT_ID = sa.select(recipient.c.id).where(
    recipient.c.type == sa.bindparam("rtype"), recipient.c.type_id == sa.bindparam("type_id")
)


async def get_or_create_recipient(conn: AsyncConnection, rtype: int, type_id: int) -> int:
    """The recipient row's id, inserting it on first use. A concurrent insert of the same
    row loses on the unique constraint and reads the winner's row instead."""
    params = {"rtype": rtype, "type_id": type_id}
    found = (await conn.execute(_RECIPIENT_ID, params)).scalar()
    if found is not None:
        return int(found)
    try:
        async with conn.begin_nested():
            result = await conn.execute(
                sa.insert(recipient).values(type=rtype, type_id=type_id).returning(recipient.c.id)
            )
            return int(result.scalar_one())
    except IntegrityError:
        return int((await conn.execute(_RECIPIENT_ID, params)).scalar_one())


def group_hash(user_ids: Sequence[int]) -> str:
    """Zulip's identity of a direct-message group: SHA-1 of the sorted member ids."""
    text = ",".join(str(uid) for uid in sorted(set(user_ids)))
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


async def get_or_create_group_recipient(
    conn: AsyncConnection, realm_id: int, user_ids: Sequence[int]
) -> int:
    members = sorted(set(user_ids))
    digest = group_hash(members)
    query = sa.select(direct_message_group.c.id).where(direct_message_group.c.group_hash == digest)
    group_id = (await conn.execute(query)).scalar()
    if group_id is None:
        try:
            async with conn.begin_nested():
                group_id = (
                    await conn.execute(
                        sa.insert(direct_message_group)
                        .values(realm_id=realm_id, group_hash=digest, group_size=len(members))
                        .returning(direct_message_group.c.id)
                    )
                ).scalar_one()
                await conn.execute(
                    sa.insert(direct_message_group_member),
                    [{"group_id": group_id, "user_profile_id": uid} for uid in members],
                )
        except IntegrityError:
            group_id = (await conn.execute(query)).scalar_one()
    return await get_or_create_recipient(conn, RECIPIENT_DIRECT_MESSAGE_GROUP, int(group_id))


async def direct_recipient_id(conn: AsyncConnection, sender: User, recipients: list[User]) -> int:
    """Zulip's addressing: to oneself or one other person, the personal recipient of that
    person; to two or more others, the group of everyone including the sender."""
    others = {u.id for u in recipients} - {sender.id}
    if not others:
        return await get_or_create_recipient(conn, RECIPIENT_PERSONAL, sender.id)
    if len(others) == 1:
        return await get_or_create_recipient(conn, RECIPIENT_PERSONAL, others.pop())
    return await get_or_create_group_recipient(conn, sender.realm_id, [*others, sender.id])


async def incoming_direct_recipient_id(
    conn: AsyncConnection, sender: User, recipients: list[User]
) -> int | None:
    """For a 1:1 direct message to someone else, the recipient id its receiver sees: the
    sender's personal recipient, the one the receiver's own messages in the conversation
    carry (feature level 327). Made here if the sender has none yet, so that fetching the
    message later shows the same id. None for other messages."""
    others = {u.id for u in recipients} - {sender.id}
    if len(others) != 1:
        return None
    return await get_or_create_recipient(conn, RECIPIENT_PERSONAL, sender.id)


async def stream_recipient_id(conn: AsyncConnection, stream_id: int) -> int:
    return await get_or_create_recipient(conn, RECIPIENT_STREAM, stream_id)
