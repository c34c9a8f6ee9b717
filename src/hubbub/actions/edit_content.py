"""A content edit: the new Markdown rendered as the sender's, and the recipients' mention and
alert-word flags recomputed from it.

As in Zulip 8.0 the content is normalized as when sending, except that an edit to nothing
leaves "(deleted)"; the realm's ``can_mention_many_users_group`` applies as when sending (the
topic's participants are counted in the message's topic before the edit). Every row of the
message gets its mention flags recomputed: mentioned by name or through a group,
stream-wide and topic wildcards, and alert words. Zulip 8.0 never clears
``stream_wildcard_mentioned`` nor ``group_mentioned`` on an edit; hubbub recomputes them too,
so that flags always describe the current content.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from hubbub.actions.edit_checks import TargetMessage
from hubbub.actions.mention_flags import CONTENT_FLAGS, get_mention_targets
from hubbub.actions.send_message import check_wildcard_mentions, normalize_content
from hubbub.db.dialects import user_message_tables
from hubbub.db.tables import user_message
from hubbub.markdown import RenderResult
from hubbub.models import Realm, User
from hubbub.queries.alert_words import alert_words_in_realm
from hubbub.queries.render_context import load_render_context
from hubbub.queries.streams import get_subscriber_ids
from hubbub.rendering import render_markdown_off_loop
from hubbub.transaction import Tx

# The Markdown processor version stored with rendered content (the same as sending).
RENDERED_CONTENT_VERSION = 1


@dataclass(frozen=True)
class ContentEdit:
    content: str
    rendered: RenderResult
    # Alert words of the message's recipients (the sender's own do not count), by user.
    alert_words: dict[int, list[str]]

    @property
    def is_me_message(self) -> bool:
        return self.content.startswith("/me ")


async def _row_flags(tx: Tx, message_id: int) -> dict[int, int]:
    rows = await tx.conn.execute(
        sa.select(user_message.c.user_profile_id, user_message.c.flags).where(
            user_message.c.message_id == message_id
        )
    )
    return {uid: int(flags) for uid, flags in rows}


async def render_content_edit(
    tx: Tx, realm: Realm, sender: User, msg: TargetMessage, raw: str, *, realm_url: str
) -> ContentEdit:
    """Normalize and render the new content; raises before anything is written."""
    content = normalize_content(raw if raw.rstrip() else "(deleted)")
    holders = set(await _row_flags(tx, msg.id))
    words = {
        uid: found
        for uid, found in (await alert_words_in_realm(tx.conn, realm.id)).items()
        if uid in holders and uid != sender.id
    }
    ctx = await load_render_context(
        tx.conn,
        realm,
        sender,
        realm_url=realm_url,
        alert_words=[w for found in words.values() for w in found],
        content=content,
    )
    rendered = await render_markdown_off_loop(content, ctx)
    if msg.stream_id is not None:
        subscribers = (await get_subscriber_ids(tx.conn, [msg.stream_id]))[msg.stream_id]
        await check_wildcard_mentions(
            tx, realm, sender, rendered, msg.recipient_id, msg.topic, len(subscribers)
        )
    return ContentEdit(content, rendered, words)


async def update_content_flags(
    tx: Tx, msg: TargetMessage, edit: ContentEdit, *, topic: str
) -> None:
    """Recompute the message's mention and alert-word flags (after any topic change, so
    that ``@**topic**`` reaches the participants of the message's new topic)."""
    targets = await get_mention_targets(
        tx,
        msg.realm_id,
        edit.rendered,
        edit.alert_words,
        stream_recipient=(msg.recipient_id, topic) if msg.stream_id is not None else None,
    )
    changed = []
    rows = await _row_flags(tx, msg.id)
    individual = targets.individual(rows)
    for uid, flags in rows.items():
        value = flags & ~CONTENT_FLAGS | targets.common | individual.get(uid, 0)
        if value != flags:
            changed.append({"b_user": uid, "b_flags": value})
    if changed:
        for table in user_message_tables(tx.conn):
            await tx.conn.execute(
                sa.update(table)
                .where(
                    table.c.message_id == msg.id,
                    table.c.user_profile_id == sa.bindparam("b_user"),
                )
                .values(flags=sa.bindparam("b_flags")),
                changed,
            )
