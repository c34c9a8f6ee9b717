"""Creating, editing and deleting saved snippets, and their ``saved_snippets`` events.

Behaviour follows Zulip 10.2 (feature levels 297 and 368):
- a title and a content are stripped of surrounding whitespace, then must not be blank
  (Zulip's wording "title cannot be blank") and must fit 60 and 10,000 characters;
- an edit changes what is given; an edit naming neither field does nothing and, as in
  Zulip, does not even look the snippet up;
- a snippet belongs to one user: another user's id is "Saved snippet does not exist.";
- only the owner's queues hear of changes: ``saved_snippets`` with ``op`` ``add`` (the
  snippet), ``update`` (the snippet, sent even when nothing changed) and ``remove`` (its
  id). Zulip's changelog calls the type ``saved_snippet``; its code and clients use
  ``saved_snippets``.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from hubbub.db.tables import saved_snippet
from hubbub.errors import JsonableError
from hubbub.models import User
from hubbub.queries.saved_snippets import access_saved_snippet, saved_snippet_dict
from hubbub.transaction import Tx

MAX_TITLE_LENGTH = 60
MAX_CONTENT_LENGTH = 10000  # Zulip's MAX_MESSAGE_LENGTH


def check_snippet_text(var_name: str, value: str, limit: int) -> str:
    """Zulip's stripped, required, capped string, with its typed-endpoint wording."""
    text = value.strip()
    if not text:
        raise JsonableError(f"{var_name} cannot be blank")
    if len(text) > limit:
        raise JsonableError(f"{var_name} is too long (limit: {limit} characters)")
    return text


def _notify(tx: Tx, user: User, event: dict[str, Any]) -> None:
    tx.notify(user.realm_id, {"type": "saved_snippets", **event}, [user.id])


async def check_create_saved_snippet(
    tx: Tx, user: User, *, title: str, content: str, now: float
) -> int:
    title = check_snippet_text("title", title, MAX_TITLE_LENGTH)
    content = check_snippet_text("content", content, MAX_CONTENT_LENGTH)
    result = await tx.conn.execute(
        sa.insert(saved_snippet).values(
            user_profile_id=user.id, title=title, content=content, date_created=now
        )
    )
    snippet_id = int(result.inserted_primary_key[0])  # type: ignore[index]
    row = await access_saved_snippet(tx.conn, user.id, snippet_id)
    _notify(tx, user, {"op": "add", "saved_snippet": saved_snippet_dict(row)})
    return snippet_id


async def check_edit_saved_snippet(
    tx: Tx, user: User, snippet_id: int, *, title: str | None, content: str | None
) -> None:
    if title is not None:
        title = check_snippet_text("title", title, MAX_TITLE_LENGTH)
    if content is not None:
        content = check_snippet_text("content", content, MAX_CONTENT_LENGTH)
    if title is None and content is None:
        return
    await access_saved_snippet(tx.conn, user.id, snippet_id)
    changes = {"title": title, "content": content}
    await tx.conn.execute(
        sa.update(saved_snippet)
        .where(saved_snippet.c.id == snippet_id)
        .values({k: v for k, v in changes.items() if v is not None})
    )
    row = await access_saved_snippet(tx.conn, user.id, snippet_id)
    _notify(tx, user, {"op": "update", "saved_snippet": saved_snippet_dict(row)})


async def do_delete_saved_snippet(tx: Tx, user: User, snippet_id: int) -> None:
    await access_saved_snippet(tx.conn, user.id, snippet_id)
    await tx.conn.execute(sa.delete(saved_snippet).where(saved_snippet.c.id == snippet_id))
    _notify(tx, user, {"op": "remove", "saved_snippet_id": snippet_id})
