"""Topic policies (muted, unmuted, followed) follow a topic that moved as a whole.

Zulip 8.0's rule, applied when the acting user moved every message of the topic they can
read:
- users who lose access to the messages lose their policy for the old topic;
- everyone else's policy for the old topic is removed and set on the new topic; when the
  new topic already had messages, the two policies merge: equal ones stay, an "unmuted"
  on either side wins, anything else falls back to the stream's default (no policy).

Each change goes through the ordinary user-topic action, so clients get the usual
``muted_topics`` and ``user_topic`` events.
"""

from __future__ import annotations

import sqlalchemy as sa

from hubbub.actions.user_topics import do_set_user_topic_visibility_policy
from hubbub.db.tables import user_topic
from hubbub.models import Stream, User
from hubbub.queries.user_topics import VisibilityPolicy
from hubbub.queries.users import get_user_by_id
from hubbub.transaction import Tx


async def _policies(tx: Tx, stream_id: int, topic: str) -> dict[int, int]:
    rows = await tx.conn.execute(
        sa.select(user_topic.c.user_profile_id, user_topic.c.visibility_policy).where(
            user_topic.c.stream_id == stream_id,
            sa.func.lower(user_topic.c.topic_name) == topic.lower(),
        )
    )
    return {uid: int(policy) for uid, policy in rows}


def merged_policy(orig: int, target: int) -> int:
    """The policy of a topic merged into one that already had messages."""
    if orig == target:
        return orig
    if VisibilityPolicy.UNMUTED in (orig, target):
        return VisibilityPolicy.UNMUTED
    return VisibilityPolicy.INHERIT


async def migrate_user_topics(
    tx: Tx,
    old_stream: Stream,
    old_topic: str,
    new_stream: Stream,
    new_topic: str,
    *,
    target_had_messages: bool,
    losing_access: set[int],
    now: float,
) -> None:
    if old_stream.id == new_stream.id and old_topic.lower() == new_topic.lower():
        # A change of case only: the policies (matched case-insensitively) already apply.
        return
    orig = await _policies(tx, old_stream.id, old_topic)
    target = await _policies(tx, new_stream.id, new_topic)
    users: dict[int, User] = {}
    for uid in sorted(set(orig) | set(target)):
        found = await get_user_by_id(tx.conn, old_stream.realm_id, uid)
        if found is not None:
            users[uid] = found
    inherit = VisibilityPolicy.INHERIT
    for uid, user in users.items():
        before = orig.get(uid, inherit)
        current = target.get(uid, inherit)
        if uid in losing_access and before != inherit:
            # No policy may remain on a topic the user can no longer read, nor move.
            await do_set_user_topic_visibility_policy(
                tx, user, old_stream, old_topic, inherit, now=now
            )
            if uid not in target:
                continue
            before = inherit
        elif before != inherit:
            await do_set_user_topic_visibility_policy(
                tx, user, old_stream, old_topic, inherit, now=now
            )
        after = merged_policy(before, current) if target_had_messages else before
        if after != current:
            await do_set_user_topic_visibility_policy(
                tx, user, new_stream, new_topic, VisibilityPolicy(after), now=now
            )
