"""Adding and removing emoji reactions, and the ``reaction`` events.

Behaviour follows Zulip 8.0:
- a reaction is identified by (emoji_code, reaction_type); the name is a label, so two
  names of one emoji are the same reaction;
- adding: a missing code or type is looked up from the name, the realm's active custom
  emoji first ("Emoji 'x' does not exist"); when someone already reacted with that
  emoji, the new reaction is a vote for it and takes that reaction's name unchecked (so
  a vote for a deactivated custom emoji still counts); otherwise the name, code and type
  are validated ("Invalid emoji code.", "Invalid emoji name.", "Invalid custom emoji.",
  "Invalid custom emoji name.", "This custom emoji has been deactivated.", "Invalid
  emoji type."); a custom emoji's code is its id;
- removing: ``reaction_type`` defaults to ``unicode_emoji`` and a missing code is looked
  up from the name (an active custom emoji's name gives its id); the trio is not
  revalidated (the row proves it was valid);
- a reader of a stream message without a ``user_message`` row gets a historical (read)
  row, so later events about the message reach them;
- reacting is "participation" for ``automatically_follow_topics_policy`` and
  ``automatically_unmute_topics_in_muted_streams_policy`` (feature level 214);
- the event goes to every user with a row for the message plus, in a stream whose
  history is public to subscribers, every subscriber.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from hubbub.actions.emoji_checks import check_realm_emoji_request, emoji_data_for_realm_name
from hubbub.actions.message_follow import apply_participation_policy
from hubbub.db.dialects import user_message_settled
from hubbub.db.tables import message, reaction, recipient
from hubbub.errors import JsonableError, ReactionDoesNotExistError, ReactionExistsError
from hubbub.models import User
from hubbub.queries.message_dicts import RECIPIENT_STREAM
from hubbub.queries.messages import HISTORICAL, READ, access_message
from hubbub.queries.reactions import (
    get_history_subscriber_ids,
    get_reaction_name,
    get_user_message_holder_ids,
    has_reaction,
)
from hubbub.transaction import Tx

UNICODE_EMOJI = "unicode_emoji"
# automatically_*_policy value 1: "topics the user participates in".
_PARTICIPATION = 1


@dataclass(frozen=True)
class TargetMessage:
    """A message the acting user may read, locked for the rest of the transaction."""

    id: int
    sender_id: int
    stream_id: int | None  # None for a direct message
    topic: str
    # Whether the acting user has a user_message row for it.
    has_row: bool


async def access_message_for_update(tx: Tx, user: User, message_id: int) -> TargetMessage:
    """Lock the message row (so concurrent reactions and submessages on it serialize, as
    Zulip's ``lock_message``) and check that ``user`` may read it."""
    row = (
        await tx.conn.execute(
            sa.select(
                message.c.id,
                message.c.sender_id,
                message.c.topic,
                recipient.c.type,
                recipient.c.type_id,
            )
            .join(recipient, recipient.c.id == message.c.recipient_id)
            .where(message.c.id == message_id, message.c.realm_id == user.realm_id)
            .with_for_update(of=message)
        )
    ).first()
    if row is None:
        raise JsonableError("Invalid message(s)")
    found = await access_message(tx.conn, user, message_id)
    is_stream = row.type == RECIPIENT_STREAM
    return TargetMessage(
        id=row.id,
        sender_id=row.sender_id,
        stream_id=row.type_id if is_stream else None,
        topic=row.topic,
        has_row=found.flags is not None,
    )


async def create_historical_row(tx: Tx, user: User, message_id: int) -> None:
    """A read, historical ``user_message`` row: the user now receives the message's events.
    (The caller read that the user has none: ``TargetMessage.has_row``.)"""
    await tx.conn.execute(
        sa.insert(user_message_settled(tx.conn)).values(
            user_profile_id=user.id, message_id=message_id, flags=READ | HISTORICAL
        )
    )


async def notify_reaction_update(
    tx: Tx, user: User, target: TargetMessage, op: str, name: str, code: str, kind: str
) -> None:
    event = {
        "type": "reaction",
        "op": op,
        "message_id": target.id,
        "emoji_name": name,
        "emoji_code": code,
        "reaction_type": kind,
        "user_id": user.id,
        # Deprecated since feature level 2, still sent by Zulip 8.0.
        "user": {"user_id": user.id, "email": user.email, "full_name": user.full_name},
    }
    user_ids = await get_user_message_holder_ids(tx.conn, target.id)
    if target.stream_id is not None:
        user_ids |= await get_history_subscriber_ids(tx.conn, target.stream_id)
    tx.notify(user.realm_id, event, sorted(user_ids))


async def do_add_reaction(
    tx: Tx, user: User, target: TargetMessage, name: str, code: str, kind: str, *, now: float
) -> None:
    """Store a checked reaction (the message row is locked) and queue its events."""
    await tx.conn.execute(
        sa.insert(reaction).values(
            message_id=target.id,
            user_profile_id=user.id,
            emoji_name=name,
            emoji_code=code,
            reaction_type=kind,
        )
    )
    if target.stream_id is not None:
        await apply_participation_policy(tx, user, target.stream_id, target.topic, now=now)
    await notify_reaction_update(tx, user, target, "add", name, code, kind)


async def check_add_reaction(
    tx: Tx,
    user: User,
    message_id: int,
    emoji_name: str,
    emoji_code: str | None,
    reaction_type: str | None,
    *,
    now: float,
) -> None:
    """``POST /messages/{message_id}/reactions``."""
    target = await access_message_for_update(tx, user, message_id)
    if emoji_code is None or reaction_type is None:
        found_code, found_type = await emoji_data_for_realm_name(tx.conn, user.realm_id, emoji_name)
        emoji_code = found_code if emoji_code is None else emoji_code
        reaction_type = found_type if reaction_type is None else reaction_type
    if await has_reaction(tx.conn, target.id, emoji_code, reaction_type, user_id=user.id):
        raise ReactionExistsError()
    existing_name = await get_reaction_name(tx.conn, target.id, emoji_code, reaction_type)
    if existing_name is not None:
        # A vote for a reaction someone already added: one emoji shows under one name.
        emoji_name = existing_name
    else:
        await check_realm_emoji_request(
            tx.conn, user.realm_id, emoji_name, emoji_code, reaction_type
        )
    if not target.has_row:
        await create_historical_row(tx, user, target.id)
    await do_add_reaction(tx, user, target, emoji_name, emoji_code, reaction_type, now=now)


async def check_remove_reaction(
    tx: Tx,
    user: User,
    message_id: int,
    emoji_name: str | None,
    emoji_code: str | None,
    reaction_type: str,
) -> None:
    """``DELETE /messages/{message_id}/reactions``."""
    target = await access_message_for_update(tx, user, message_id)
    if emoji_code is None:
        if emoji_name is None:
            raise JsonableError(
                "At least one of the following arguments must be present: emoji_name, emoji_code"
            )
        # Only the code is looked up: the type stays as given (or its default), as in Zulip.
        emoji_code, _ = await emoji_data_for_realm_name(tx.conn, user.realm_id, emoji_name)
    row = (
        await tx.conn.execute(
            sa.select(reaction.c.id, reaction.c.emoji_name).where(
                reaction.c.user_profile_id == user.id,
                reaction.c.message_id == target.id,
                reaction.c.emoji_code == emoji_code,
                reaction.c.reaction_type == reaction_type,
            )
        )
    ).first()
    if row is None:
        raise ReactionDoesNotExistError()
    await tx.conn.execute(sa.delete(reaction).where(reaction.c.id == row.id))
    # The event names the emoji as the removed row did.
    await notify_reaction_update(
        tx, user, target, "remove", row.emoji_name, emoji_code, reaction_type
    )
