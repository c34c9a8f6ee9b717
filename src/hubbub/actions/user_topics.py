"""Setting a user's visibility policy for a topic (mute, unmute, follow) and its events.

Behaviour follows Zulip 8.0:
- a policy of INHERIT (0) deletes the user's row; any other policy creates or updates it;
- a request that changes nothing (the same policy again, or removing a policy that is not
  set) succeeds without touching the row or sending any event (feature level 170 stopped
  answering "Topic already muted" / "Topic is not muted" for these);
- otherwise the user gets, in this order, the legacy ``muted_topics`` event (the full list
  of muted topics, for clients without ``user_topic`` support) and then ``user_topic``.
  Both go to every queue of the user; a queue's ``event_types`` decides which it keeps.

Topics match case-insensitively. Unlike Zulip, which keeps the case of the row's first
request, the stored name takes the case of the latest request that changed it, so that
/register ``user_topics`` agrees with the ``topic_name`` of the last event sent. A request
that differs from the row only in the topic's case therefore counts as a change.
"""

from __future__ import annotations

from typing import Literal

import sqlalchemy as sa

from hubbub.db.dialects import for_name
from hubbub.db.tables import user_topic
from hubbub.models import Stream, User
from hubbub.queries.user_topics import (
    VisibilityPolicy,
    access_stream_for_topic_policy,
    access_stream_to_remove_policy,
    get_user_topic,
    muted_topics_legacy,
    user_topic_dict,
)
from hubbub.topic_names import check_topic_characters
from hubbub.transaction import Tx

MAX_TOPIC_NAME_LENGTH = 60


def _upsert(dialect: str) -> sa.Insert:
    """An insert that becomes an update when a concurrent transaction has just created the
    row: two first sends to a new topic at once both find no row and both follow it, and
    on PostgreSQL the second plain insert would violate the unique index."""
    statement = for_name(dialect).insert(user_topic)
    upsert: sa.Insert = statement.on_conflict_do_update(
        index_elements=[
            user_topic.c.user_profile_id,
            user_topic.c.stream_id,
            sa.func.lower(user_topic.c.topic_name),
        ],
        set_={
            "topic_name": statement.excluded.topic_name,
            "last_updated": statement.excluded.last_updated,
            "visibility_policy": statement.excluded.visibility_policy,
        },
    )
    return upsert


async def do_set_user_topic_visibility_policy(
    tx: Tx,
    user: User,
    target: Stream,
    topic_name: str,
    policy: VisibilityPolicy,
    *,
    now: float,
) -> bool:
    """Store ``policy`` for the topic and queue the events; False when nothing changed."""
    row = await get_user_topic(tx.conn, user.id, target.id, topic_name)
    if policy == VisibilityPolicy.INHERIT:
        if row is None:
            return False
        await tx.conn.execute(sa.delete(user_topic).where(user_topic.c.id == row.id))
    elif row is None:
        await tx.conn.execute(
            _upsert(tx.conn.dialect.name),
            {
                "user_profile_id": user.id,
                "stream_id": target.id,
                "topic_name": topic_name,
                "last_updated": now,
                "visibility_policy": int(policy),
            },
        )
    elif row.visibility_policy == policy and row.topic_name == topic_name:
        return False
    else:
        await tx.conn.execute(
            sa.update(user_topic)
            .where(user_topic.c.id == row.id)
            .values(topic_name=topic_name, last_updated=now, visibility_policy=int(policy))
        )
    muted = await muted_topics_legacy(tx.conn, user.id)
    tx.notify(user.realm_id, {"type": "muted_topics", "muted_topics": muted}, [user.id])
    tx.notify(
        user.realm_id,
        {"type": "user_topic", **user_topic_dict(target.id, topic_name, now, int(policy))},
        [user.id],
    )
    return True


async def check_set_user_topic(
    tx: Tx, user: User, stream_id: int, topic_name: str, policy: VisibilityPolicy, *, now: float
) -> None:
    """``POST /user_topics``. Setting a policy needs a stream the user can read; removing
    one only needs the stream to exist in the realm (Zulip's rule, so a user who lost
    access can still clear a policy)."""
    if policy == VisibilityPolicy.INHERIT:
        target = await access_stream_to_remove_policy(
            tx.conn, user, "Invalid stream ID", stream_id=stream_id
        )
    else:
        check_topic_characters(topic_name)
        target = await access_stream_for_topic_policy(tx.conn, user, stream_id=stream_id)
    await do_set_user_topic_visibility_policy(tx, user, target, topic_name, policy, now=now)


async def check_update_muted_topic(
    tx: Tx,
    user: User,
    *,
    stream_id: int | None,
    stream_name: str | None,
    topic_name: str,
    op: Literal["add", "remove"],
    now: float,
) -> None:
    """The deprecated ``PATCH /users/me/subscriptions/muted_topics``: ``add`` mutes the
    topic, ``remove`` clears its policy (whatever it was, as in Zulip). The caller has
    checked that exactly one of ``stream_id`` and ``stream_name`` is given."""
    if op == "add":
        check_topic_characters(topic_name)
        target = await access_stream_for_topic_policy(
            tx.conn, user, stream_id=stream_id, name=stream_name
        )
        policy = VisibilityPolicy.MUTED
    else:
        target = await access_stream_to_remove_policy(
            tx.conn, user, "Topic is not muted", stream_id=stream_id, name=stream_name
        )
        policy = VisibilityPolicy.INHERIT
    await do_set_user_topic_visibility_policy(tx, user, target, topic_name, policy, now=now)
