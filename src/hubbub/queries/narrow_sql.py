"""Narrow terms -> SQLAlchemy Core: which messages a user may see that match a narrow.

A user sees their own ``user_message`` rows. A narrow that names a stream (or
``streams:public``) also searches that stream's history the user may read without a row
(Zulip's ``ok_to_include_history``): public streams for non-guests, web-public streams, and
private streams with shared history the user is subscribed to; such messages report the
flags ``["read", "historical"]``. Private streams without shared history give only the
user's own rows, so their history is limited to what the user received.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from hubbub import search
from hubbub.db.dialects import WHOLE_VIEW, long_read
from hubbub.db.tables import (
    message,
    reaction,
    recipient,
    stream,
    subscription,
    user_message,
    user_topic,
)
from hubbub.errors import BadNarrowError
from hubbub.models import User
from hubbub.queries.messages import (
    ANY_MENTION,
    HAS_ALERT_WORD,
    HISTORICAL,
    IS_PRIVATE,
    READ,
    STARRED,
    flag_is,
    flag_set,
)
from hubbub.queries.narrow import (
    ConversationKinds,
    NarrowTerm,
    parse_id,
    with_empty_topic_named,
)
from hubbub.queries.narrow_people import (
    dm_condition,
    dm_including,
    groups_with,
    is_number,
    is_stream_message,
    one_user_named,
)
from hubbub.queries.narrow_with import resolve_with_operator
from hubbub.queries.stream_permissions import group_readable_stream_ids
from hubbub.queries.streams import get_stream_by_id, is_subscribed
from hubbub.queries.user_topics import VisibilityPolicy
from hubbub.search import sqlite as search_sqlite
from hubbub.topic_names import RESOLVED_TOPIC_PREFIX

RECIPIENT_PERSONAL = 1
RECIPIENT_STREAM = 2
RECIPIENT_GROUP = 3

# ``is:`` operands that are not properties of the user's rows keep stream history in view.
HISTORY_SAFE_IS = frozenset({"resolved", "followed", "muted"})
# ``is:`` operands answered from the user's own flags alone.
FLAG_IS = frozenset({"dm", "private", "starred", "unread", "mentioned", "alerted"})


# The user's row of each message in a stream history's look-up (``_own_flags``): one
# alias, made once (its column collection, made for every query, showed in the loop's
# profile under load).
_OWN_FLAGS = user_message.alias("own_flags")


@dataclass
class NarrowQuery:
    """The conditions of one narrow for one user, ready to select messages with."""

    user: User
    conditions: list[ColumnElement[bool]]
    include_history: bool
    search_queries: list[str] = field(default_factory=list)
    # A positive stream term: stream muting then hides nothing (the user asked for it).
    names_stream: bool = False
    # Only flag terms (all messages, is:unread, is:starred, ...): walk the user's rows in
    # id order rather than collecting and sorting them, which for a user with many rows
    # read all of them.
    rows_first: bool = False
    # SQLite: (index in ``conditions``, FTS5 query) of the first search term, which a page
    # of results may replace by the matches nearest its anchor (``fetch_window``).
    fts_driver: tuple[int, str] | None = None
    # A negated search term: PostgreSQL's choice of walk (``walk_rows``) covers only
    # words that must match.
    negated_search: bool = False
    # The database's dialect: on SQLite ``user_message`` is a view of two tables
    # (migration 0019), which an outer join would read all of the user's rows of first:
    # with stream history each message's row is looked up instead (``_own_flags``); a
    # statement with an inner join runs over each table in turn
    # (``dialects.over_user_message``).
    dialect: str = "postgresql"
    # Private streams the narrow names whose history the user reads through a group
    # granting content access (``_note_group_access``).
    group_stream_ids: list[int] = field(default_factory=list)

    def _looks_up_rows(self) -> bool:
        return self.include_history and self.dialect == "sqlite"

    # ``_own_flags``, built once a query (a page's statements name it up to five times).
    own_flags_lookup: ColumnElement[int] | None = field(default=None, repr=False)

    def _own_flags(self) -> ColumnElement[int]:
        """The flags of the user's row of each message, or NULL (SQLite with history)."""
        if self.own_flags_lookup is None:
            self.own_flags_lookup = (
                sa.select(_OWN_FLAGS.c.flags)
                .where(
                    _OWN_FLAGS.c.user_profile_id == self.user.id,
                    _OWN_FLAGS.c.message_id == message.c.id,
                )
                .scalar_subquery()
            )
        return self.own_flags_lookup

    def order_id(self) -> ColumnElement[int]:
        """The id column to order pages by: the same ids, in the index the query walks."""
        return user_message.c.message_id if self.rows_first else message.c.id

    def from_clause(self, *, above: int | None = None, below: int | None = None) -> sa.FromClause:
        on = [
            user_message.c.message_id == message.c.id,
            user_message.c.user_profile_id == self.user.id,
        ]
        # Id bounds repeated on the user's rows: PostgreSQL does not carry an inequality
        # across the join's equality, and without them scans the rows from the first.
        on.extend(id_bounds(user_message.c.message_id, above, below))
        if self._looks_up_rows():
            return message
        if self.include_history:
            return message.outerjoin(user_message, sa.and_(*on))
        return message.join(user_message, sa.and_(*on))

    def flags(self) -> ColumnElement[int]:
        own = self._own_flags() if self._looks_up_rows() else user_message.c.flags
        return sa.func.coalesce(own, READ | HISTORICAL)

    def where(self, fts_window: ColumnElement[bool] | None = None) -> ColumnElement[bool]:
        # No ``realm_id`` condition: the user's rows and the history they may read are all
        # of their realm already, and one only tempted SQLite into scanning the realm's
        # whole message index newest-first.
        visible: ColumnElement[bool] = sa.true()
        if self.include_history:
            own = self._own_flags() if self._looks_up_rows() else user_message.c.flags
            visible = sa.or_(
                own.is_not(None),
                message.c.recipient_id.in_(history_recipients(self.user, self.group_stream_ids)),
            )
        conditions = list(self.conditions)
        if fts_window is not None and self.fts_driver is not None:
            conditions[self.fts_driver[0]] = fts_window
        return sa.and_(visible, *conditions)

    def select(
        self,
        *columns: Any,
        above: int | None = None,
        below: int | None = None,
        fts_window: ColumnElement[bool] | None = None,
    ) -> sa.Select[Any]:
        """Matching messages, optionally only those with ids strictly between bounds;
        ``fts_window`` replaces the driving search condition (see ``fts_driver``). A long
        read (``LONG_READ``): how many rows a narrow walks has no bound."""
        bounds = id_bounds(message.c.id, above, below)
        statement = long_read(
            sa.select(*columns)
            .select_from(self.from_clause(above=above, below=below))
            .where(self.where(fts_window), *bounds)
        )
        if self._looks_up_rows():
            # No join to run once per table: each look-up reads both (``_own_flags``).
            return statement.execution_options(**{WHOLE_VIEW: True})
        return statement

    def walk_rows(
        self, *, above: int | None, below: int | None, newest_first: bool, limit: int
    ) -> tuple[sa.Select[Any], ColumnElement[int]]:
        """(id, flags) of a page of ``limit`` matches, found by walking the user's rows in
        id order and checking each message by its key, with the column to order them by.
        For PostgreSQL's search (``search.postgresql.SearchEstimate``); not with stream
        history, which has no rows to walk."""
        assert not self.include_history
        checked = (
            sa.select(sa.literal(1).label("one"))
            .select_from(message)
            .where(message.c.id == user_message.c.message_id, *self.conditions)
            # A fence: the check stays a lookup per row; without it the planner may turn
            # the walk into a scan of every message of the realm.
            .offset(0)
            .lateral("checked")
        )
        bounds = id_bounds(user_message.c.message_id, above, below)
        ids = (
            sa.select(user_message.c.message_id.label("id"))
            .select_from(user_message.join(checked, sa.true()))
            .where(user_message.c.user_profile_id == self.user.id, *bounds)
        )
        return self._with_flags(ids, user_message.c.message_id, newest_first, limit)

    def walk_index(
        self, *, above: int | None, below: int | None, newest_first: bool, limit: int
    ) -> tuple[sa.Select[Any], ColumnElement[int]] | None:
        """(id, flags) of a page of ``limit`` matches, found by reading every match of the
        message-side conditions (the search index's) and keeping those the user has a row
        of, with the column to order them by; None when a condition tests the user's
        flags."""
        assert not self.include_history
        if any(_uses_user_rows(condition) for condition in self.conditions):
            return None
        bounds = id_bounds(message.c.id, above, below)
        hits = (
            sa.select(message.c.id)
            .where(*self.conditions, *bounds)
            .cte("hits")
            .prefix_with("MATERIALIZED", dialect="postgresql")
        )
        own = (
            sa.select(sa.literal(1).label("one"))
            .where(
                user_message.c.user_profile_id == self.user.id,
                user_message.c.message_id == hits.c.id,
            )
            .offset(0)  # a fence, as in walk_rows: a lookup per match, not a hash of rows
            .lateral("own")
        )
        ids = sa.select(hits.c.id).select_from(hits.join(own, sa.true()))
        return self._with_flags(ids, hits.c.id, newest_first, limit)

    def _with_flags(
        self, ids: sa.Select[Any], order: ColumnElement[int], newest_first: bool, limit: int
    ) -> tuple[sa.Select[Any], ColumnElement[int]]:
        """The first ``limit`` of a walk's ``ids`` (by ``order``), then the user's flags of
        only those. A walk that tests each row's existence by the primary key alone reads
        the index, not the table: reading each walked row's flags read a page of
        ``user_message`` for nearly every row, where the page's flags alone read a few
        (bench/results/postgresql.md, *PostgreSQL search and presence*)."""
        page = ids.order_by(order.desc() if newest_first else order).limit(limit).subquery("page")
        select = sa.select(page.c.id, user_message.c.flags).select_from(
            page.join(
                user_message,
                sa.and_(
                    user_message.c.user_profile_id == self.user.id,
                    user_message.c.message_id == page.c.id,
                ),
            )
        )
        return select, page.c.id


def id_bounds(
    column: ColumnElement[int], above: int | None, below: int | None
) -> list[ColumnElement[bool]]:
    """``column`` strictly between the bounds given."""
    bounds = []
    if above is not None:
        bounds.append(column > above)
    if below is not None:
        bounds.append(column < below)
    return bounds


def _uses_user_rows(condition: ColumnElement[bool]) -> bool:
    return any(
        isinstance(element, sa.Column) and element.table is user_message
        for element in sa.sql.visitors.iterate(condition)
    )


def history_recipients(user: User, group_stream_ids: Iterable[int] = ()) -> sa.Select[tuple[int]]:
    """Recipient ids of the streams whose whole history ``user`` may read; the private
    streams of ``group_stream_ids`` are readable through groups granting content access,
    which the caller checked (``group_readable_stream_ids``)."""
    subscribed = sa.exists().where(
        subscription.c.stream_id == stream.c.id,
        subscription.c.user_profile_id == user.id,
        subscription.c.active,
    )
    readable = sa.or_(
        stream.c.is_web_public,
        sa.and_(stream.c.history_public_to_subscribers, subscribed),
    )
    if not user.is_guest:
        readable = sa.or_(readable, ~stream.c.invite_only)
    granted = sorted(set(group_stream_ids))
    if granted:
        readable = sa.or_(readable, stream.c.id.in_(granted))
    return (
        sa.select(recipient.c.id)
        .join(
            stream,
            sa.and_(recipient.c.type == RECIPIENT_STREAM, recipient.c.type_id == stream.c.id),
        )
        .where(stream.c.realm_id == user.realm_id, readable)
    )


def _topic_policy(user: User, policies: tuple[int, ...]) -> ColumnElement[bool]:
    """The message's topic has one of ``policies`` for ``user``."""
    return sa.exists().where(
        recipient.c.id == message.c.recipient_id,
        recipient.c.type == RECIPIENT_STREAM,
        user_topic.c.stream_id == recipient.c.type_id,
        user_topic.c.user_profile_id == user.id,
        sa.func.lower(user_topic.c.topic_name) == sa.func.lower(message.c.topic),
        user_topic.c.visibility_policy.in_(policies),
    )


def muted_condition(user: User, *, include_stream_mutes: bool = True) -> ColumnElement[bool]:
    """Messages hidden from ``in:home``: muted topics, and topics of muted streams that
    the user has not unmuted or followed (unmuted topics: feature level 170)."""
    muted_topic = _topic_policy(user, (VisibilityPolicy.MUTED,))
    if not include_stream_mutes:
        return muted_topic
    muted_streams = (
        sa.select(recipient.c.id)
        .join(
            subscription,
            sa.and_(
                recipient.c.type == RECIPIENT_STREAM,
                recipient.c.type_id == subscription.c.stream_id,
            ),
        )
        .where(
            subscription.c.user_profile_id == user.id,
            subscription.c.active,
            subscription.c.is_muted,
        )
    )
    in_muted_stream = sa.and_(
        message.c.recipient_id.in_(muted_streams),
        ~_topic_policy(user, (VisibilityPolicy.UNMUTED, VisibilityPolicy.FOLLOWED)),
    )
    return sa.or_(muted_topic, in_muted_stream)


# A stream narrow's recipient, by id or by name; built once (every stream narrow asks).
_STREAM_RECIPIENT = (
    sa.select(
        stream.c.id,
        recipient.c.id.label("rid"),
        stream.c.invite_only,
        stream.c.history_public_to_subscribers,
    )
    .outerjoin(
        recipient,
        sa.and_(recipient.c.type == RECIPIENT_STREAM, recipient.c.type_id == stream.c.id),
    )
    .where(stream.c.realm_id == sa.bindparam("realm_id"))
    .order_by(stream.c.deactivated, stream.c.id)
)
_STREAM_RECIPIENT_BY_ID = _STREAM_RECIPIENT.where(stream.c.id == sa.bindparam("key"))
_STREAM_RECIPIENT_BY_NAME = _STREAM_RECIPIENT.where(
    sa.func.lower(stream.c.name) == sa.bindparam("key")
)


async def _stream_recipient(
    conn: AsyncConnection, query: NarrowQuery, operand: str | int
) -> int | None:
    # Any stream of the realm, even archived or inaccessible: access is decided by the
    # user's rows and history_recipients, never by naming the stream.
    user = query.user
    key: int | str
    if isinstance(operand, int) or is_number(operand):
        statement, key = _STREAM_RECIPIENT_BY_ID, int(operand)
    else:
        statement, key = _STREAM_RECIPIENT_BY_NAME, operand.lower()
    row = (await conn.execute(statement, {"realm_id": user.realm_id, "key": key})).first()
    if row is None:
        # "channel" whichever operator named it (the rename, feature level 255).
        raise BadNarrowError(f"unknown channel {operand}")
    if row.invite_only and row.history_public_to_subscribers and query.include_history:
        await _note_group_access(conn, query, int(row.id))
    return int(row.rid) if row.rid is not None else None


async def _note_group_access(conn: AsyncConnection, query: NarrowQuery, stream_id: int) -> None:
    """A narrow names a private stream with shared history: its history is readable if the
    user reads it through a group granting content access (feature level 354). Only the
    streams a narrow names are checked, so other narrows cost nothing more."""
    if query.user.is_guest or stream_id in query.group_stream_ids:
        return
    found = await get_stream_by_id(conn, query.user.realm_id, stream_id)
    if found is None or await is_subscribed(conn, query.user.id, stream_id):
        return
    if await group_readable_stream_ids(conn, query.user, [found]):
        query.group_stream_ids.append(stream_id)


def _include_history(user: User, terms: list[NarrowTerm]) -> bool:
    # ``streams:public`` opens history only to those who may read public streams: a guest
    # gets their own rows there, as in Zulip 8.0 (even of web-public streams, which a
    # ``stream`` term would open to them).
    names_stream = any(
        not t.negated
        and (
            t.operator == "stream"
            or (t.operator == "streams" and t.operand == "public" and not user.is_guest)
        )
        for t in terms
    )
    uses_flags = any(t.operator == "is" and t.operand not in HISTORY_SAFE_IS for t in terms)
    return names_stream and not uses_flags


async def build_narrow_query(
    conn: AsyncConnection,
    user: User,
    terms: list[NarrowTerm],
    *,
    include_history: bool | None = None,
) -> NarrowQuery:
    """The narrow's query; ``include_history`` overrides whether it reads stream history
    (the narrow's terms decide by default). Its conditions are built for that choice.

    The terms are first read as Zulip 10.2 reads them: the empty topic's display name as
    the empty topic (feature level 334), then a ``with`` term as its conversation (feature
    level 271)."""
    terms = await resolve_with_operator(conn, user, with_empty_topic_named(terms))
    has_stream = any(t.operator == "stream" and not t.negated for t in terms)
    if include_history is None:
        include_history = _include_history(user, terms)
    query = NarrowQuery(
        user,
        [],
        include_history,
        names_stream=has_stream,
        dialect=conn.dialect.name,
    )
    query.rows_first = not query.include_history and all(
        (t.operator == "is" and t.operand in FLAG_IS) or t.operator == "in" for t in terms
    )
    flags = query.flags()
    kinds = ConversationKinds()
    for term in terms:
        kinds.note(term)
        condition = await _term_condition(conn, query, term, flags)
        if condition is None:
            continue
        query.conditions.append(sa.not_(condition) if term.negated else condition)
    return query


async def _term_condition(
    conn: AsyncConnection,
    query: NarrowQuery,
    term: NarrowTerm,
    flags: ColumnElement[int],
) -> ColumnElement[bool] | None:
    user, op, operand = query.user, term.operator, term.operand
    if op == "stream":
        assert not isinstance(operand, tuple)
        rid = await _stream_recipient(conn, query, operand)
        return message.c.recipient_id == rid if rid is not None else sa.false()
    if op == "streams":
        column = stream.c.is_web_public if operand == "web-public" else ~stream.c.invite_only
        return message.c.recipient_id.in_(
            sa.select(recipient.c.id)
            .join(
                stream,
                sa.and_(recipient.c.type == RECIPIENT_STREAM, recipient.c.type_id == stream.c.id),
            )
            .where(stream.c.realm_id == user.realm_id, column)
        )
    if op == "topic":
        topic = str(operand)
        if topic == "":
            # Direct messages have no topic (stored as ""): the empty topic is only a
            # stream's (feature level 334), as Zulip's ``is_channel_message`` test.
            return sa.and_(message.c.topic == "", is_stream_message())
        return sa.func.lower(message.c.topic) == topic.lower()
    if op == "sender":
        return message.c.sender_id == await one_user_named(conn, user, operand)
    if op == "dm":
        return await dm_condition(conn, user, operand)
    if op == "dm-including":
        return dm_including(user, await one_user_named(conn, user, operand), flags)
    if op == "group-pm-with":
        other = await one_user_named(conn, user, operand)
        return message.c.recipient_id.in_(groups_with(other))
    if op == "is":
        return _is_condition(query, str(operand), flags)
    if op == "has":
        if operand == "reaction":
            return sa.exists().where(reaction.c.message_id == message.c.id)
        return {"link": message.c.has_link, "image": message.c.has_image}.get(
            str(operand), message.c.has_attachment
        ) == sa.true()
    if op == "in":
        if operand == "all":
            return None
        # Muted streams count even in a narrow to one (Zulip's ``by_in`` does not look at
        # the narrow's stream; only the first unread anchor does).
        return ~muted_condition(user)
    if op == "id":
        return message.c.id == parse_id(operand)
    if op == "search":
        query.search_queries.append(str(operand))
        query.negated_search = query.negated_search or term.negated
        if conn.dialect.name == "sqlite" and not term.negated and not query.fts_driver:
            match = search_sqlite.fts_query(str(operand))
            if match:
                query.fts_driver = (len(query.conditions), match)
        return search.search_condition(conn.dialect.name, str(operand))
    # "near" only moves the anchor (the client sends it as the anchor too).
    return None


# ``is:`` operands with a partial index of the rows they select (unread: on PostgreSQL;
# SQLite reads the user's keyed rows, migration 0016): (bit, set or not).
_INDEXED_FLAGS = {
    "dm": (IS_PRIVATE, True),
    "private": (IS_PRIVATE, True),
    "starred": (STARRED, True),
    "unread": (READ, False),
}


def _is_condition(
    query: NarrowQuery, operand: str, flags: ColumnElement[int]
) -> ColumnElement[bool]:
    user = query.user
    if not query.include_history and operand in _INDEXED_FLAGS:
        # Every match has a row of the user's: test its flags with a literal bit, the form
        # of the partial indexes of starred, unread and direct-message rows (a coalesce
        # with a bound parameter made is:starred walk all of a user's rows).
        bit, present = _INDEXED_FLAGS[operand]
        return flag_is(bit, present)
    if operand in ("dm", "private"):
        return flag_set(flags, IS_PRIVATE)
    if operand == "starred":
        return flag_set(flags, STARRED)
    if operand == "unread":
        return flags.op("&")(READ) == 0
    if operand == "mentioned":
        return flag_set(flags, ANY_MENTION)
    if operand == "alerted":
        return flag_set(flags, HAS_ALERT_WORD)
    if operand == "resolved":
        return message.c.topic.startswith(RESOLVED_TOPIC_PREFIX, autoescape=True)
    if operand == "followed":
        return _topic_policy(user, (VisibilityPolicy.FOLLOWED,))
    # "muted" (feature level 366): what in:home hides, whatever stream the narrow names.
    return muted_condition(user)
