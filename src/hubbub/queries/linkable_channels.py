"""The channels a rendering may link, and the messages its topic links name.

Zulip 10.2 resolves ``#**channel**`` links only to channels whose content the writer may
access (subscribed, a public channel for a non-guest, a web-public one, or a private one
through a group granting content access), so that a link reveals no private channel's id
or name; archived channels are linked like the others, as their content stays readable.
With no writer (profile values, the organization description) every channel of the realm
with the name is linked.

A topic link names a message of the topic with ``/with/`` (feature level 347): before
Zulip 11.0 the oldest one the writer may read, that is the topic's first message when the
channel's history is public to subscribers and else the writer's own first row in it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.dialects import PerDialect, ids_argument
from hubbub.db.fast import fetch_rows, named
from hubbub.db.tables import message, recipient, stream, subscription, user_message
from hubbub.models import Stream, User
from hubbub.queries.message_dicts import RECIPIENT_STREAM
from hubbub.queries.stream_permissions import has_content_access

# Topic lookups per statement: each is one scalar subquery with two parameters.
_TOPICS_PER_STATEMENT = 100


@dataclass(frozen=True)
class LinkableChannel:
    stream: Stream
    recipient_id: int | None


_CHANNELS = sa.select(stream, recipient.c.id.label("recipient_id")).outerjoin(
    recipient, sa.and_(recipient.c.type == RECIPIENT_STREAM, recipient.c.type_id == stream.c.id)
)
_REALM_CHANNELS = _CHANNELS.where(stream.c.realm_id == sa.bindparam("realm_id"))
_NAMED_CHANNELS = PerDialect(
    lambda dialect: _REALM_CHANNELS.where(dialect.in_ids(stream.c.name, "names"))
)
_SUBSCRIBED = PerDialect(
    lambda dialect: sa.select(subscription.c.stream_id).where(
        subscription.c.user_profile_id == sa.bindparam("user_id"),
        subscription.c.active,
        dialect.in_ids(subscription.c.stream_id, "ids"),
    )
)


def _one_per_name(rows: Iterable[LinkableChannel]) -> list[LinkableChannel]:
    """An active channel wins over an archived one of the same name (hubbub, unlike Zulip,
    lets a new channel take an archived one's name), then the oldest."""
    chosen: dict[str, LinkableChannel] = {}
    for row in sorted(rows, key=lambda c: (c.stream.deactivated, c.stream.id)):
        chosen.setdefault(row.stream.name, row)
    return sorted(chosen.values(), key=lambda c: c.stream.id)


async def _subscribed_ids(conn: AsyncConnection, user: User, ids: Collection[int]) -> set[int]:
    if not ids:
        return set()
    params = {"user_id": user.id, "ids": ids_argument(conn, ids)}
    return {int(stream_id) for (stream_id,) in await fetch_rows(conn, _SUBSCRIBED(conn), params)}


async def get_linkable_channels(
    conn: AsyncConnection, realm_id: int, names: Collection[str] | None, writer: User | None
) -> list[LinkableChannel]:
    """The realm's channels named ``names`` (exactly, as Zulip matches link names; every
    channel when None) that ``writer`` may read, or all of them with no writer."""
    if names is None:
        rows = await fetch_rows(conn, _REALM_CHANNELS, {"realm_id": realm_id})
    elif not names:
        return []
    else:
        params = {"realm_id": realm_id, "names": ids_argument(conn, names)}
        rows = await fetch_rows(conn, _NAMED_CHANNELS(conn), params)
    channels = _one_per_name(
        LinkableChannel(Stream.from_row(row), named(row)["recipient_id"]) for row in rows
    )
    if writer is None:
        return channels
    subscribed = await _subscribed_ids(conn, writer, [c.stream.id for c in channels])
    return [
        c
        for c in channels
        if await has_content_access(conn, writer, c.stream, subscribed=c.stream.id in subscribed)
    ]


def _first_message(i: int, *, public_history: bool) -> sa.ScalarSelect[Any]:
    """The oldest message of topic ``t{i}`` in the channel of recipient ``r{i}``; when the
    history is not public, the oldest that the ``reader`` has a row for. The topic is
    compared as the topic narrow compares it (the database's lower case, on both sides)."""
    query = sa.select(sa.func.min(message.c.id)).where(
        message.c.recipient_id == sa.bindparam(f"r{i}"),
        sa.func.lower(message.c.topic) == sa.func.lower(sa.bindparam(f"t{i}", type_=sa.String)),
    )
    if not public_history:
        query = query.where(
            sa.exists().where(
                user_message.c.user_profile_id == sa.bindparam("reader"),
                user_message.c.message_id == message.c.id,
            )
        )
    return query.scalar_subquery()


@lru_cache(maxsize=64)
def _topics_statement(public_history: tuple[bool, ...]) -> sa.Select[Any]:
    """One row holding a lookup per topic, the ``i``-th in a channel whose history is
    public when ``public_history[i]``; built once per shape, as a statement's building
    cost more than its run."""
    return sa.select(
        *(
            _first_message(i, public_history=public).label(f"m{i}")
            for i, public in enumerate(public_history)
        )
    )


async def get_topic_link_message_ids(
    conn: AsyncConnection,
    channels: Iterable[LinkableChannel],
    topics: Iterable[tuple[str, str]],
    reader: User | None,
) -> dict[tuple[str, str], int]:
    """For each (channel name, topic) of ``topics`` whose channel is among ``channels``,
    the message a topic link names with ``/with/``; pairs with no such message are left
    out. Every lookup of a statement runs in one round trip."""
    by_name = {c.stream.name: c for c in channels}
    lookups: list[tuple[tuple[str, str], LinkableChannel]] = []
    for pair in sorted(set(topics)):
        channel = by_name.get(pair[0])
        if channel is None or channel.recipient_id is None:
            continue
        if not channel.stream.history_public_to_subscribers and reader is None:
            continue
        lookups.append((pair, channel))
    found: dict[tuple[str, str], int] = {}
    for start in range(0, len(lookups), _TOPICS_PER_STATEMENT):
        chunk = lookups[start : start + _TOPICS_PER_STATEMENT]
        shape = tuple(channel.stream.history_public_to_subscribers for _, channel in chunk)
        params: dict[str, object] = {"reader": reader.id if reader is not None else 0}
        for i, ((_, topic), channel) in enumerate(chunk):
            params[f"r{i}"] = channel.recipient_id
            params[f"t{i}"] = topic
        row = (await conn.execute(_topics_statement(shape), params)).one()
        for (pair, _), message_id in zip(chunk, row, strict=True):
            if message_id is not None:
                found[pair] = int(message_id)
    return found
