"""Creating, editing and deleting server-stored drafts, and their ``drafts`` events.

Behaviour follows Zulip 8.0 (feature level 87 onwards):
- every operation, reads included, fails with "User has disabled synchronizing drafts."
  while the user's ``enable_drafts_synchronization`` is off;
- a draft object has exactly ``type``, ``to``, ``topic``, ``content`` and an optional
  ``timestamp`` (default now), checked with Zulip's validator wording;
- a stream draft names exactly one stream the user can access; a direct-message draft
  names existing users of the realm, stored as the other participants (or the user alone
  for a note to self); a direct-message draft with no recipients becomes type "";
- content is normalized as for messages (surrounding blank lines dropped, an empty
  content refused) and the topic truncated to 60 characters;
- the user's own queues get ``drafts`` add / update / remove events.
"""

from __future__ import annotations

from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import draft
from hubbub.errors import JsonableError
from hubbub.models import User
from hubbub.queries.drafts import access_draft, draft_dict
from hubbub.queries.streams import access_stream_by_id
from hubbub.queries.user_settings import get_user_settings
from hubbub.queries.users import get_user_by_id
from hubbub.transaction import Tx

MAX_MESSAGE_LENGTH = 10000
MAX_TOPIC_LENGTH = 60
_REQUIRED_KEYS = ("type", "to", "topic", "content")
_DRAFT_TYPES = ("stream", "private", "")


async def check_drafts_enabled(conn: AsyncConnection, user: User) -> None:
    settings = await get_user_settings(conn, user.id)
    if not settings["enable_drafts_synchronization"]:
        raise JsonableError("User has disabled synchronizing drafts.")


def _truncate(text: str, limit: int, marker: str) -> str:
    return text if len(text) <= limit else text[: limit - len(marker)] + marker


def check_draft_shape(value: Any, var_name: str) -> dict[str, Any]:
    """Zulip's ``check_dict_only`` of a draft, with its error wording."""
    if not isinstance(value, dict):
        raise JsonableError(f"{var_name} is not a dict")
    for key in _REQUIRED_KEYS:
        if key not in value:
            raise JsonableError(f"{key} key is missing from {var_name}")
    extra = [k for k in value if k not in (*_REQUIRED_KEYS, "timestamp")]
    if extra:
        raise JsonableError(f"Unexpected arguments: {', '.join(extra)}")

    def name(key: str) -> str:
        return f'{var_name}["{key}"]'

    kind, to, topic, content = (value[k] for k in _REQUIRED_KEYS)
    if not isinstance(kind, str):
        raise JsonableError(f"{name('type')} is not a string")
    if kind not in _DRAFT_TYPES:
        raise JsonableError(f"Invalid {name('type')}")
    if not isinstance(to, list):
        raise JsonableError(f"{name('to')} is not a list")
    for i, item in enumerate(to):
        if not isinstance(item, int) or isinstance(item, bool):
            raise JsonableError(f"{name('to')}[{i}] is not an integer")
    if not isinstance(topic, str):
        raise JsonableError(f"{name('topic')} is not a string")
    if not isinstance(content, str):
        raise JsonableError(f"{name('content')} is not a string")
    if not content.strip():
        raise JsonableError(f"{name('content')} cannot be blank.")
    timestamp = value.get("timestamp")
    if timestamp is not None and (
        not isinstance(timestamp, int | float) or isinstance(timestamp, bool)
    ):
        raise JsonableError(f"{name('timestamp')} is not an allowed_type")
    return value


async def _further_validated(
    conn: AsyncConnection, user: User, data: dict[str, Any], *, now: float
) -> dict[str, Any]:
    """The row values of a draft whose shape is valid, or Zulip's error."""
    content = data["content"].rstrip().lstrip("\n")
    if not content:
        raise JsonableError("Message must not be empty")
    if "\x00" in content:
        raise JsonableError("Message must not contain null bytes")
    content = _truncate(content, MAX_MESSAGE_LENGTH, "\n[message truncated]")
    timestamp = data.get("timestamp")
    timestamp = round(now if timestamp is None else float(timestamp), 6)
    if timestamp < 0:
        raise JsonableError("Timestamp must not be negative.")
    kind, to, topic = data["type"], list(data["to"]), ""
    if kind == "stream":
        topic = _truncate(data["topic"], MAX_TOPIC_LENGTH, "...")
        if len(to) != 1:
            raise JsonableError("Must specify exactly 1 stream ID for stream messages")
        await access_stream_by_id(conn, user, to[0])
    elif kind == "private" and to:
        for user_id in sorted(set(to)):
            recipient = await get_user_by_id(conn, user.realm_id, user_id)
            if recipient is None:
                raise JsonableError(f"Invalid user ID {user_id}")
            if not recipient.is_active and not recipient.is_bot:
                raise JsonableError(f"'{recipient.email}' is no longer using Zulip.")
        others = sorted(set(to) - {user.id})
        to = others or [user.id]
    else:
        # Zulip keeps no recipient for these, so they read back as type "" with no "to".
        kind, to = "", []
    return {
        "type": kind,
        "to": orjson.dumps(to).decode(),
        "topic": topic,
        "content": content,
        "last_edit_time": timestamp,
    }


async def do_create_drafts(tx: Tx, user: User, drafts: list[Any], *, now: float) -> list[int]:
    """``POST /drafts``: all or nothing, in the order given; one ``add`` event."""
    await check_drafts_enabled(tx.conn, user)
    rows = []
    for i, value in enumerate(drafts):
        shaped = check_draft_shape(value, f"drafts[{i}]")
        rows.append(await _further_validated(tx.conn, user, shaped, now=now))
    created = []
    for values in rows:
        result = await tx.conn.execute(
            sa.insert(draft).values(user_profile_id=user.id, **values).returning(draft)
        )
        created.append(draft_dict(result.one()))
    if created:
        tx.notify(user.realm_id, {"type": "drafts", "op": "add", "drafts": created}, [user.id])
    return [d["id"] for d in created]


async def do_edit_draft(tx: Tx, user: User, draft_id: int, value: Any, *, now: float) -> None:
    """``PATCH /drafts/{id}``: replace the draft wholesale."""
    await check_drafts_enabled(tx.conn, user)
    shaped = check_draft_shape(value, "draft")
    await access_draft(tx.conn, user.id, draft_id)
    values = await _further_validated(tx.conn, user, shaped, now=now)
    result = await tx.conn.execute(
        sa.update(draft).where(draft.c.id == draft_id).values(**values).returning(draft)
    )
    tx.notify(
        user.realm_id,
        {"type": "drafts", "op": "update", "draft": draft_dict(result.one())},
        [user.id],
    )


async def do_delete_draft(tx: Tx, user: User, draft_id: int) -> None:
    await check_drafts_enabled(tx.conn, user)
    await access_draft(tx.conn, user.id, draft_id)
    await tx.conn.execute(sa.delete(draft).where(draft.c.id == draft_id))
    tx.notify(user.realm_id, {"type": "drafts", "op": "remove", "draft_id": draft_id}, [user.id])
