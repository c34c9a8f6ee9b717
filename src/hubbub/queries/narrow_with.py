"""The ``with`` narrow operator (feature level 271): a message id naming its conversation.

``with:<id>`` stands for the conversation that holds the message now, so a link built
with it keeps working after the topic is moved or resolved. When the user may read the
message, its conversation's terms (``stream`` and ``topic``, or ``dm``) replace any such
terms of the narrow. When the message does not exist or is unreadable, the operator is
dropped if the remaining terms name a conversation by themselves (links into private
streams without shared history), and is an error otherwise, as in Zulip 10.2.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import direct_message_group_member, message, recipient
from hubbub.errors import BadNarrowError, JsonableError
from hubbub.models import User
from hubbub.queries.messages import access_message
from hubbub.queries.narrow import MAX_MESSAGE_ID, InvalidOperatorCombinationError, NarrowTerm

RECIPIENT_PERSONAL = 1
RECIPIENT_STREAM = 2
RECIPIENT_GROUP = 3

# The terms a conversation replaces, by the operator as the client spelled it (Zulip
# 10.2 compares spellings: ``pm_with`` is not one of them).
_CONVERSATION_SPELLINGS = frozenset({"stream", "channel", "topic", "dm", "pm-with"})


def _with_message_id(operand: str | int | tuple[int, ...]) -> int:
    if isinstance(operand, int):
        return operand
    if isinstance(operand, str):
        try:
            return int(operand)
        except ValueError:
            pass
    raise BadNarrowError("Invalid 'with' operator")


def _names_conversation(terms: list[NarrowTerm]) -> bool:
    """Whether the terms name one conversation: a ``dm`` term, or stream and topic."""
    names = {term.name for term in terms}
    return bool(names & {"dm", "pm-with"}) or (
        bool(names & {"stream", "channel"}) and "topic" in names
    )


async def _conversation_terms(
    conn: AsyncConnection, user: User, message_id: int
) -> list[NarrowTerm]:
    """The terms of the conversation that holds a message the user may read."""
    row = (
        await conn.execute(
            sa.select(message.c.topic, message.c.sender_id, recipient.c.type, recipient.c.type_id)
            .join(recipient, recipient.c.id == message.c.recipient_id)
            .where(message.c.id == message_id)
        )
    ).one()
    if row.type == RECIPIENT_STREAM:
        return [
            NarrowTerm("stream", int(row.type_id), spelled="channel"),
            NarrowTerm("topic", row.topic),
        ]
    if row.type == RECIPIENT_GROUP:
        members = (
            await conn.execute(
                sa.select(direct_message_group_member.c.user_profile_id)
                .where(direct_message_group_member.c.group_id == row.type_id)
                .order_by(direct_message_group_member.c.user_profile_id)
            )
        ).scalars()
        return [NarrowTerm("dm", tuple(int(uid) for uid in members))]
    # A one-to-one message's conversation is the one with the other person, whichever of
    # the two sent it; a message to oneself is the conversation with oneself.
    participants = {int(row.sender_id), int(row.type_id)}
    others = participants - {user.id}
    return [NarrowTerm("dm", tuple(sorted(others or participants)))]


async def resolve_with_operator(
    conn: AsyncConnection, user: User, terms: list[NarrowTerm]
) -> list[NarrowTerm]:
    """The narrow with its ``with`` term, if any, replaced by what it stands for."""
    found = [term for term in terms if term.operator == "with"]
    if not found:
        return terms
    if len(found) > 1:
        raise InvalidOperatorCombinationError("Duplicate 'with' operators.")
    (with_term,) = found
    rest = [term for term in terms if term is not with_term]
    message_id = _with_message_id(with_term.operand)
    readable = 0 < message_id <= MAX_MESSAGE_ID
    if readable:
        try:
            await access_message(conn, user, message_id)
        except JsonableError:
            readable = False
    if not readable:
        if _names_conversation(rest):
            return rest
        raise BadNarrowError("Invalid 'with' operator")
    kept = [term for term in rest if term.name not in _CONVERSATION_SPELLINGS]
    return [*await _conversation_terms(conn, user, message_id), *kept]
