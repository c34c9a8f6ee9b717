"""Narrow operands that name users: ``sender``, ``dm``, ``dm-including`` and
``group-pm-with``, resolved to user ids and to conditions on the conversations they name.

An operand names users by id or by email, several of them separated by commas; a narrow
naming a user the realm does not have fails with Zulip's ``BAD_NARROW`` error.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from hubbub.db.tables import direct_message_group_member, message, recipient, user_profile
from hubbub.errors import BadNarrowError
from hubbub.models import User
from hubbub.queries.message_dicts import (
    RECIPIENT_DIRECT_MESSAGE_GROUP,
    RECIPIENT_PERSONAL,
    RECIPIENT_STREAM,
)
from hubbub.queries.messages import IS_PRIVATE, flag_set


def is_number(text: str) -> bool:
    # ASCII digits only: ``int`` refuses other characters ``isdigit`` accepts ("²").
    return text.isascii() and text.isdigit()


async def user_ids_named(
    conn: AsyncConnection, user: User, operand: str | int | tuple[int, ...]
) -> list[int] | None:
    """The users an operand names (ids, or emails separated by commas), or None if any
    is unknown."""
    if isinstance(operand, int):
        items: list[str | int] = [operand]
    elif isinstance(operand, tuple):
        items = list(operand)
    else:
        items = [part.strip() for part in operand.split(",") if part.strip()]
    if not items:
        return None
    ids = {int(x) for x in items if isinstance(x, int) or is_number(x)}
    emails = {x.lower() for x in items if isinstance(x, str) and not is_number(x)}
    found: set[int] = set()
    rows = await conn.execute(
        sa.select(user_profile.c.id, user_profile.c.email).where(
            user_profile.c.realm_id == user.realm_id,
            sa.or_(
                user_profile.c.id.in_(ids),
                sa.func.lower(user_profile.c.email).in_(emails),
            ),
        )
    )
    seen_emails = set()
    for uid, email in rows:
        found.add(uid)
        seen_emails.add(email.lower())
    if not ids <= found or not emails <= seen_emails:
        return None
    return sorted(found)


def operand_text(operand: str | int | tuple[int, ...]) -> str:
    return str(list(operand)) if isinstance(operand, tuple) else str(operand)


async def one_user_named(
    conn: AsyncConnection, user: User, operand: str | int | tuple[int, ...]
) -> int:
    ids = await user_ids_named(conn, user, operand)
    if ids is None or len(ids) != 1:
        raise BadNarrowError(f"unknown user {operand_text(operand)}")
    return ids[0]


def _personal(user_id: int) -> sa.Select[tuple[int]]:
    return sa.select(recipient.c.id).where(
        recipient.c.type == RECIPIENT_PERSONAL, recipient.c.type_id == user_id
    )


def groups_with(user_id: int) -> sa.Select[tuple[int]]:
    return (
        sa.select(recipient.c.id)
        .join(
            direct_message_group_member,
            direct_message_group_member.c.group_id == recipient.c.type_id,
        )
        .where(
            recipient.c.type == RECIPIENT_DIRECT_MESSAGE_GROUP,
            direct_message_group_member.c.user_profile_id == user_id,
        )
    )


async def _group_recipient(conn: AsyncConnection, members: set[int]) -> int | None:
    """The recipient of the direct message group of exactly ``members``, if any."""
    first = min(members)
    candidates = (
        await conn.execute(
            sa.select(direct_message_group_member.c.group_id).where(
                direct_message_group_member.c.user_profile_id == first
            )
        )
    ).scalars()
    for group_id in candidates:
        got = set(
            (
                await conn.execute(
                    sa.select(direct_message_group_member.c.user_profile_id).where(
                        direct_message_group_member.c.group_id == group_id
                    )
                )
            ).scalars()
        )
        if got == members:
            rid = (
                await conn.execute(
                    sa.select(recipient.c.id).where(
                        recipient.c.type == RECIPIENT_DIRECT_MESSAGE_GROUP,
                        recipient.c.type_id == group_id,
                    )
                )
            ).scalar()
            return int(rid) if rid is not None else None
    return None


async def dm_condition(
    conn: AsyncConnection, user: User, operand: str | int | tuple[int, ...]
) -> ColumnElement[bool]:
    ids = await user_ids_named(conn, user, operand)
    if ids is None:
        raise BadNarrowError(f"unknown user in {operand_text(operand)}")
    others = set(ids) - {user.id}
    if not others:
        return sa.and_(
            message.c.sender_id == user.id, message.c.recipient_id.in_(_personal(user.id))
        )
    options: list[ColumnElement[bool]] = []
    if len(others) == 1:
        (other,) = others
        options += [
            sa.and_(message.c.sender_id == user.id, message.c.recipient_id.in_(_personal(other))),
            sa.and_(message.c.sender_id == other, message.c.recipient_id.in_(_personal(user.id))),
        ]
    group = await _group_recipient(conn, others | {user.id})
    if group is not None:
        options.append(message.c.recipient_id == group)
    return sa.or_(*options) if options else sa.false()


def is_stream_message() -> ColumnElement[bool]:
    return sa.exists().where(
        recipient.c.id == message.c.recipient_id, recipient.c.type == RECIPIENT_STREAM
    )


def dm_including(user: User, other: int, flags: ColumnElement[int]) -> ColumnElement[bool]:
    if other == user.id:
        return flag_set(flags, IS_PRIVATE)
    return sa.or_(
        sa.and_(message.c.sender_id == user.id, message.c.recipient_id.in_(_personal(other))),
        sa.and_(message.c.sender_id == other, message.c.recipient_id.in_(_personal(user.id))),
        message.c.recipient_id.in_(groups_with(other)),
    )
