"""Placeholder (issue 8): mobile push notifications for new messages."""

from __future__ import annotations

from hubbub.models import Realm, User
from hubbub.transaction import Tx


async def enqueue_message_push(
    tx: Tx,
    realm: Realm,
    sender: User,
    message_id: int,
    flags: dict[int, int],
    *,
    is_stream: bool,
    now: float,
) -> None:
    """A new message was written with these per-recipient ``flags``: queue the push
    notifications it calls for (delivered by the background scheduler)."""
