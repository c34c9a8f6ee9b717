"""Sending one due scheduled message as its sender, or recording why it could not be sent.

Behaviour follows Zulip 8.0 (feature level 181 for failures):
- the message is checked again at delivery, as if sent then: a realm or sender
  deactivated since, a stream archived, a permission lost, a recipient deactivated;
- a message more than 10 minutes late (a server that was down) is not sent;
- a sent message is marked delivered with the new message's id, in the transaction that
  sent it, and the sender's queues get a ``scheduled_messages`` remove event;
- a message that cannot be sent stays listed with ``failed: true`` and its
  ``failure_message``, and the sender gets an ``update`` event (not when the realm or the
  sender was deactivated, as Zulip; hubbub has no Notification Bot, so Zulip's direct
  message telling the sender about the failure is not sent).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from hubbub.actions.scheduled_messages import (
    notify_scheduled_message_remove,
    notify_scheduled_message_update,
)
from hubbub.actions.send_message import SendRequest, check_send_message
from hubbub.db.tables import scheduled_message
from hubbub.errors import ApiError, JsonableError, RealmDeactivatedError, UserDeactivatedError
from hubbub.models import Realm, User
from hubbub.outages import is_transient
from hubbub.queries.realms import get_realm_by_id
from hubbub.queries.scheduled_messages import claim_due_scheduled_message
from hubbub.queries.users import get_user_by_id
from hubbub.transaction import Tx

logger = logging.getLogger("hubbub.scheduled")

# Zulip's SCHEDULED_MESSAGE_LATE_CUTOFF_MINUTES.
LATE_CUTOFF_SECONDS = 10 * 60


async def deliver_one_due_scheduled_message(
    tx: Tx, *, now: float, realm_url: Callable[[Realm], str]
) -> int | None:
    """Claim the oldest due message and send it (or mark it failed); its id, or None when
    nothing is due. The claim's row lock lasts until ``tx`` commits."""
    row = await claim_due_scheduled_message(tx.conn, now)
    if row is None:
        return None
    realm = await get_realm_by_id(tx.conn, row.realm_id)
    sender = await get_user_by_id(tx.conn, row.realm_id, row.sender_id)
    assert realm is not None and sender is not None  # both cascade-delete the row
    logger.info("sending scheduled message %d (sender %d)", row.id, sender.id)
    notices, jobs = len(tx.notices), len(tx.after_commit)
    try:
        async with tx.conn.begin_nested():
            message_id = await _send(tx, realm, sender, row, now=now, realm_url=realm_url(realm))
    except Exception as exc:
        if is_transient(exc):
            # A lost race or an outage says nothing about the message: the transaction
            # rolls back, the message stays due, and the next pass sends it (or, past the
            # late cutoff, records that it could not be sent).
            raise
        # The savepoint undid the attempt's rows; drop its events and after-commit work too.
        del tx.notices[notices:], tx.after_commit[jobs:]
        await _mark_failed(tx, sender, row, exc)
        return int(row.id)
    await tx.conn.execute(
        sa.update(scheduled_message)
        .where(scheduled_message.c.id == row.id)
        .values(delivered=True, delivered_message_id=message_id)
    )
    notify_scheduled_message_remove(tx, sender, row.id)
    return int(row.id)


async def _send(tx: Tx, realm: Realm, sender: User, row: Any, *, now: float, realm_url: str) -> int:
    if realm.deactivated:
        raise RealmDeactivatedError()
    if not sender.is_active:
        raise UserDeactivatedError()
    if now > row.scheduled_timestamp + LATE_CUTOFF_SECONDS:
        raise JsonableError("Message could not be sent at the scheduled time.")
    if row.message_type == "stream":
        kind, to, topic = "stream", str(row.stream_id), row.topic
    else:
        kind, to, topic = "direct", row.to_user_ids, None
    read = None if row.read_by_sender is None else bool(row.read_by_sender)
    request = SendRequest(kind, to, topic, row.content, row.sending_client, read_by_sender=read)
    result = await check_send_message(tx, realm, sender, request, realm_url=realm_url, now=now)
    return result.message_id


async def _mark_failed(tx: Tx, sender: User, row: Any, exc: Exception) -> None:
    if isinstance(exc, ApiError):
        reason = exc.msg
        logger.info("scheduled message %d failed: %s", row.id, reason)
    else:
        reason = "Internal server error"
        logger.exception("unexpected error sending scheduled message %d", row.id, exc_info=exc)
    updated = (
        await tx.conn.execute(
            sa.update(scheduled_message)
            .where(scheduled_message.c.id == row.id)
            .values(failed=True, failure_message=reason)
            .returning(*scheduled_message.c)
        )
    ).one()
    if not isinstance(exc, RealmDeactivatedError | UserDeactivatedError):
        notify_scheduled_message_update(tx, sender, updated)
