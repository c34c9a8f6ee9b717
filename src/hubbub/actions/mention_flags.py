"""The per-recipient flags that a message's content decides: mentions by name, through a
group, stream-wide and topic wildcards, and alert words. Sending sets them; a content edit
recomputes them (``actions/edit_content.py``)."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from hubbub.db.tables import message
from hubbub.markdown import RenderResult
from hubbub.queries.messages import (
    GROUP_MENTIONED,
    HAS_ALERT_WORD,
    MENTIONED,
    STREAM_WILDCARD_MENTIONED,
    TOPIC_WILDCARD_MENTIONED,
)
from hubbub.queries.user_groups import get_group_member_ids
from hubbub.transaction import Tx

# Every bit this module decides; the others (read, starred, historical, ...) are not its.
CONTENT_FLAGS = (
    MENTIONED
    | STREAM_WILDCARD_MENTIONED
    | TOPIC_WILDCARD_MENTIONED
    | GROUP_MENTIONED
    | HAS_ALERT_WORD
)


async def topic_participants(tx: Tx, recipient_id: int, topic: str) -> set[int]:
    """Senders in the topic: who ``@**topic**`` notifies."""
    rows = await tx.conn.execute(
        sa.select(message.c.sender_id)
        .where(
            message.c.recipient_id == recipient_id,
            sa.func.lower(message.c.topic) == topic.lower(),
        )
        .distinct()
    )
    return {uid for (uid,) in rows}


@dataclass(frozen=True)
class MentionTargets:
    """Who the rendered content reaches, resolved once for all recipients."""

    rendered: RenderResult
    group_members: frozenset[int]
    participants: frozenset[int]
    # Alert words of the recipients (never the sender's own), by user.
    alert_words: dict[int, list[str]]

    def flags_for(self, user_id: int) -> int:
        rendered = self.rendered
        value = 0
        if user_id in rendered.mentioned_user_ids:
            value |= MENTIONED
        if rendered.mentions_stream_wildcard:
            value |= STREAM_WILDCARD_MENTIONED
        if user_id in self.participants:
            value |= TOPIC_WILDCARD_MENTIONED
        if user_id in self.group_members:
            # Zulip counts a group mention as a mention of each member.
            value |= GROUP_MENTIONED | MENTIONED
        found = {w.lower() for w in rendered.alert_words}
        if any(w.lower() in found for w in self.alert_words.get(user_id, ())):
            value |= HAS_ALERT_WORD
        return value


async def get_mention_targets(
    tx: Tx,
    realm_id: int,
    rendered: RenderResult,
    alert_words: dict[int, list[str]],
    *,
    stream_recipient: tuple[int, str] | None,
    new_sender_id: int | None = None,
) -> MentionTargets:
    """``stream_recipient`` is the (recipient id, topic) of a stream message, whose topic
    wildcard reaches the topic's participants; None for direct messages.
    ``new_sender_id``: the sender of a message not written yet, a participant too."""
    members: set[int] = set()
    for group_id in rendered.mentioned_group_ids:
        members.update(await get_group_member_ids(tx.conn, realm_id, group_id))
    participants: set[int] = set()
    if rendered.mentions_topic_wildcard and stream_recipient is not None:
        participants = await topic_participants(tx, *stream_recipient)
        if new_sender_id is not None:
            participants.add(new_sender_id)
    return MentionTargets(rendered, frozenset(members), frozenset(participants), alert_words)
