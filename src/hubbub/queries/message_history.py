"""A message's edit history as ``GET /messages/{message_id}/history`` shows it (Zulip 8.0).

The stored history (``message.edit_history``, newest first) holds only what each edit
changed. The answer is a list of snapshots, oldest first: the original message has only
``topic``, ``content``, ``rendered_content``, ``timestamp`` and ``user_id`` (the sender);
each later snapshot is the message right after an edit, plus ``prev_topic``,
``prev_content``/``prev_rendered_content`` with ``content_html_diff``, and
``prev_stream``/``stream`` (feature level 118) for whatever that edit changed.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import message, recipient
from hubbub.errors import JsonableError
from hubbub.models import Realm, User
from hubbub.queries.edit_history_visibility import visible_edit_history
from hubbub.queries.message_dicts import RECIPIENT_STREAM
from hubbub.queries.messages import access_message
from hubbub.realm_settings import message_edit_history_policy
from hubbub.topic_names import display_topic

# Tags, character references, runs of whitespace, words, and other characters: the units
# a rendered-HTML diff compares.
_TOKEN = re.compile(r"<[^>]*>|&#?\w+;|\s+|\w+|[^\w\s<&]+|[<&]")
INSERTED = "highlight_text_inserted"
DELETED = "highlight_text_deleted"


def _is_tag(token: str) -> bool:
    return len(token) > 1 and token[0] == "<" and token[-1] == ">"


def _marked(tokens: list[str], css_class: str, *, keep_tags: bool) -> str:
    """The tokens with each run of text wrapped in a highlight span. Tags end a run (a
    span never crosses one); deleted tags are dropped, so the markup stays the new
    version's and stays balanced."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        text = "".join(run)
        run.clear()
        if text.strip():
            out.append(f'<span class="{css_class}">{text}</span>')
        elif keep_tags:
            out.append(text)

    for token in tokens:
        if _is_tag(token):
            flush()
            if keep_tags:
                out.append(token)
        else:
            run.append(token)
    flush()
    return "".join(out)


def html_diff(old: str, new: str) -> str:
    """The new rendering with inserted text and (in place) deleted text highlighted with
    Zulip's classes, in a ``<div>`` as Zulip sends it."""
    before, after = _TOKEN.findall(old), _TOKEN.findall(new)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.extend(after[j1:j2])
            continue
        if op in ("delete", "replace"):
            out.append(_marked(before[i1:i2], DELETED, keep_tags=False))
        if op in ("insert", "replace"):
            out.append(_marked(after[j1:j2], INSERTED, keep_tags=True))
    return f"<div>{''.join(out)}</div>"


def snapshots(row: Any) -> list[dict[str, Any]]:
    """The snapshots of one message row, oldest first."""
    content: str = row.content
    rendered: str = row.rendered_content or ""
    topic: str = row.topic
    result: list[dict[str, Any]] = []
    for entry in orjson.loads(row.edit_history) if row.edit_history else []:
        snapshot: dict[str, Any] = {
            "content": content,
            "rendered_content": rendered,
            "timestamp": int(entry["timestamp"]),
            "topic": topic,
            "user_id": entry.get("user_id"),
        }
        if "prev_topic" in entry:
            topic = entry["prev_topic"]
            snapshot["prev_topic"] = topic
        if "prev_content" in entry:
            content = entry["prev_content"]
            prev_rendered = entry.get("prev_rendered_content") or ""
            snapshot["prev_content"] = content
            snapshot["prev_rendered_content"] = prev_rendered
            snapshot["content_html_diff"] = html_diff(prev_rendered, rendered)
            rendered = prev_rendered
        if "prev_stream" in entry:
            snapshot["prev_stream"] = entry["prev_stream"]
            snapshot["stream"] = entry["stream"]
        result.append(snapshot)
    result.append(
        {
            "content": content,
            "rendered_content": rendered,
            "timestamp": int(row.date_sent),
            "topic": topic,
            "user_id": row.sender_id,
        }
    )
    result.reverse()
    return result


async def get_message_history(
    conn: AsyncConnection,
    realm: Realm,
    user: User,
    message_id: int,
    *,
    allow_empty_topic_name: bool = True,
) -> list[dict[str, Any]]:
    """The message's snapshots; a stream message's empty topic by its display name unless
    the client can show it (``allow_empty_topic_name``, feature level 334). Under the
    "moves" policy (feature level 358) only the moves are shown."""
    policy = message_edit_history_policy(realm)
    if policy == "none":
        raise JsonableError("Message edit history is disabled in this organization")
    found = await access_message(conn, user, message_id)
    row = (
        await conn.execute(
            sa.select(message, recipient.c.type.label("recipient_type"))
            .join(recipient, recipient.c.id == message.c.recipient_id)
            .where(message.c.id == found.id)
        )
    ).one()
    history = visible_edit_history(policy, snapshots(row))
    if row.recipient_type == RECIPIENT_STREAM and not allow_empty_topic_name:
        for snapshot in history:
            for key in ("topic", "prev_topic"):
                if key in snapshot:
                    snapshot[key] = display_topic(snapshot[key], allow_empty=False)
    return history
