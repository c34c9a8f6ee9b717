"""The per-recipient flags that a message's content decides: mentions by name, through a
group, stream-wide and topic wildcards, and alert words. Sending sets them; a content edit
recomputes them (``actions/edit_content.py``). A send that mentions a group (not silently)
needs the sender to be in the group's ``can_mention_group`` (a group-setting value since
feature level 258)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import sqlalchemy as sa

from hubbub.actions.user_group_permissions import user_in_group_setting
from hubbub.db.tables import message
from hubbub.errors import JsonableError
from hubbub.markdown import RenderResult
from hubbub.queries.messages import (
    GROUP_MENTIONED,
    HAS_ALERT_WORD,
    MENTIONED,
    STREAM_WILDCARD_MENTIONED,
    TOPIC_WILDCARD_MENTIONED,
)
from hubbub.queries.realms import get_realm_by_id
from hubbub.queries.user_groups import get_group, get_group_member_ids, get_group_settings
from hubbub.queries.users import get_user_by_id
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

    @property
    def common(self) -> int:
        """The bits every recipient gets: a stream-wide wildcard's."""
        return STREAM_WILDCARD_MENTIONED if self.rendered.mentions_stream_wildcard else 0

    def individual(self, user_ids: Collection[int]) -> dict[int, int]:
        """The bits of those of ``user_ids`` (a set or dict) that the content reaches
        one by one, beyond ``common``; the others get ``common`` alone.

        Sparse, by who is mentioned: asking each recipient of a big stream in turn cost
        far more than the few users a message names."""
        bits: dict[int, int] = {}

        def add(user_id: int, value: int) -> None:
            if user_id in user_ids:
                bits[user_id] = bits.get(user_id, 0) | value

        for user_id in self.rendered.mentioned_user_ids:
            add(user_id, MENTIONED)
        for user_id in self.participants:
            add(user_id, TOPIC_WILDCARD_MENTIONED)
        for user_id in self.group_members:
            # Zulip counts a group mention as a mention of each member.
            add(user_id, GROUP_MENTIONED | MENTIONED)
        found = {w.lower() for w in self.rendered.alert_words}
        if found:
            for user_id, words in self.alert_words.items():
                if any(w.lower() in found for w in words):
                    add(user_id, HAS_ALERT_WORD)
        return bits


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
    if new_sender_id is not None and rendered.mentioned_group_ids:
        await check_group_mentions_allowed(
            tx, realm_id, new_sender_id, sorted(rendered.mentioned_group_ids)
        )
    members: set[int] = set()
    for group_id in rendered.mentioned_group_ids:
        members.update(await get_group_member_ids(tx.conn, realm_id, group_id))
    participants: set[int] = set()
    if rendered.mentions_topic_wildcard and stream_recipient is not None:
        participants = await topic_participants(tx, *stream_recipient)
        if new_sender_id is not None:
            participants.add(new_sender_id)
    return MentionTargets(rendered, frozenset(members), frozenset(participants), alert_words)


async def check_group_mentions_allowed(
    tx: Tx, realm_id: int, sender_id: int, group_ids: list[int]
) -> None:
    """Refuse a message whose sender may not mention one of the groups it mentions
    (Zulip's check_user_group_mention_allowed: membership of ``can_mention_group``)."""
    sender = await get_user_by_id(tx.conn, realm_id, sender_id)
    realm = await get_realm_by_id(tx.conn, realm_id)
    assert sender is not None and realm is not None
    for group_id in group_ids:
        group = await get_group(tx.conn, realm_id, group_id)
        if group is None:
            continue
        value = (await get_group_settings(tx.conn, group))["can_mention_group"]
        if not await user_in_group_setting(tx.conn, realm, sender, "can_mention_group", value):
            raise JsonableError(f"You are not allowed to mention user group '{group.name}'.")
