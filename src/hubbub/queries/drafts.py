"""A user's server-stored drafts, as the Zulip API shows them."""

from __future__ import annotations

from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import draft
from hubbub.errors import ApiError

# Zulip 8.0 sends at most this many drafts in /register (the most recently edited).
MAX_DRAFTS_IN_REGISTER_RESPONSE = 1000


class DraftDoesNotExistError(ApiError):
    """Zulip's ``ResourceNotFoundError``: a 404 with the BAD_REQUEST code."""

    http_status = 404

    def __init__(self) -> None:
        super().__init__("Draft does not exist")


def draft_dict(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "type": row.type,
        "to": orjson.loads(row.to),
        "topic": row.topic,
        "content": row.content,
        "timestamp": int(row.last_edit_time),
    }


def draft_order_key(item: dict[str, Any]) -> tuple[int, int]:
    """Most recently edited first; ties by the newest id first. /register and the code
    that applies ``drafts`` events to it both sort with this key, so they agree."""
    return (-item["timestamp"], -item["id"])


async def list_drafts(
    conn: AsyncConnection, user_id: int, limit: int | None = None
) -> list[dict[str, Any]]:
    rows = await conn.execute(
        sa.select(draft)
        .where(draft.c.user_profile_id == user_id)
        .order_by(draft.c.last_edit_time.desc(), draft.c.id.desc())
        .limit(limit)
    )
    return sorted((draft_dict(r) for r in rows), key=draft_order_key)


async def access_draft(conn: AsyncConnection, user_id: int, draft_id: int) -> Any:
    """The user's draft row, or "Draft does not exist" (also for another user's draft)."""
    row = (
        await conn.execute(
            sa.select(draft).where(draft.c.id == draft_id, draft.c.user_profile_id == user_id)
        )
    ).first()
    if row is None:
        raise DraftDoesNotExistError()
    return row
