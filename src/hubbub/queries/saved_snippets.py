"""A user's saved snippets (feature level 297), as the Zulip API shows them."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import saved_snippet
from hubbub.errors import ApiError


class SavedSnippetDoesNotExistError(ApiError):
    """Zulip's ``ResourceNotFoundError``: a 404 with the BAD_REQUEST code, also for another
    user's snippet."""

    http_status = 404

    def __init__(self) -> None:
        super().__init__("Saved snippet does not exist.")


def saved_snippet_dict(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "title": row.title,
        "content": row.content,
        "date_created": int(row.date_created),
    }


async def list_saved_snippets(conn: AsyncConnection, user_id: int) -> list[dict[str, Any]]:
    """The user's snippets, oldest first."""
    rows = await conn.execute(
        sa.select(saved_snippet)
        .where(saved_snippet.c.user_profile_id == user_id)
        .order_by(saved_snippet.c.id)
    )
    return [saved_snippet_dict(row) for row in rows]


async def access_saved_snippet(conn: AsyncConnection, user_id: int, snippet_id: int) -> Any:
    """The user's snippet row, or "Saved snippet does not exist."."""
    row = (
        await conn.execute(
            sa.select(saved_snippet).where(
                saved_snippet.c.id == snippet_id, saved_snippet.c.user_profile_id == user_id
            )
        )
    ).first()
    if row is None:
        raise SavedSnippetDoesNotExistError()
    return row
