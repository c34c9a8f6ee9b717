"""Fetching a window of messages around an anchor in a narrow (``GET /messages``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.dialects import has_staged_rows, long_read, over_user_message
from hubbub.db.tables import message, user_message
from hubbub.errors import JsonableError
from hubbub.models import User
from hubbub.queries.message_dicts import get_message_dicts
from hubbub.queries.message_flags import unread
from hubbub.queries.messages import flag_names
from hubbub.queries.narrow_sql import NarrowQuery, muted_condition
from hubbub.queries.people import PeopleCache
from hubbub.search import highlight_html, highlight_topic
from hubbub.search import postgresql as search_postgresql
from hubbub.search import sqlite as search_sqlite
from hubbub.search.postgresql import SearchEstimate, Walk
from hubbub.topic_names import message_for_client

# Zulip's anchor for "newest", above any real message id; clients see it in ``anchor``.
LARGER_THAN_MAX_MESSAGE_ID = 10000000000000000
MAX_MESSAGES_PER_FETCH = 5000
# Message ids are 32-bit on PostgreSQL; a larger anchor is past every message.
MAX_MESSAGE_ID = 2**31 - 1


def parse_anchor(anchor: str | None, use_first_unread_anchor: bool) -> int | None:
    """The anchor as an id, or None for the first unread message.

    ``use_first_unread_anchor`` is the pre-feature-level-1 spelling of
    ``anchor=first_unread``; negative ids mean the oldest message (the web app once sent
    them), ids past the maximum the newest."""
    if use_first_unread_anchor:
        return None
    if anchor is None:
        raise JsonableError("Missing 'anchor' argument.")
    special = {"oldest": 0, "newest": LARGER_THAN_MAX_MESSAGE_ID, "first_unread": None}
    if anchor in special:
        return special[anchor]
    try:
        value = int(anchor)
    except ValueError:
        raise JsonableError("Invalid anchor") from None
    return min(max(value, 0), LARGER_THAN_MAX_MESSAGE_ID)


async def first_unread_anchor(conn: AsyncConnection, query: NarrowQuery) -> int:
    """The oldest unread message of the narrow outside muted topics (and muted streams,
    unless the narrow names a stream), else the newest anchor (Zulip's
    ``find_first_unread_anchor``)."""
    # Unread messages always have a row (history reads as read), so the user's own rows
    # suffice, and the literal flag test lets PostgreSQL's partial unread index find them
    # (SQLite walks the user's range of the keyed table, migration 0016).
    own_rows = replace(query, include_history=False)
    statement = (
        own_rows.select(message.c.id)
        .where(
            unread(),
            ~muted_condition(query.user, include_stream_mutes=not query.names_stream),
        )
        # The same id, in the order of the user's rows: no sort of every unread row.
        .order_by(user_message.c.message_id)
        .limit(1)
    )
    found = [int(mid) for (mid,) in await narrow_rows(conn, query, statement)]
    return min(found) if found else LARGER_THAN_MAX_MESSAGE_ID


async def narrow_rows(conn: AsyncConnection, query: NarrowQuery, statement: Any) -> list[Any]:
    """The rows of a narrow's statement over the user's rows (``over_user_message``: on
    SQLite each table's in turn, for the caller to merge). A search leaves out the staged
    table when it holds none of the user's rows: SQLite may start that part from the
    search's matches (the whole search again) rather than from the user's few rows."""
    staged = not query.search_queries or await has_staged_rows(conn, query.user.id)
    return list(await conn.execute(over_user_message(conn, statement, staged=staged)))


async def matching_by_id(
    conn: AsyncConnection, query: NarrowQuery, message_ids: list[int]
) -> list[tuple[int, int]]:
    """(message id, flags) of those of ``message_ids`` that match ``query``, by id:
    ``GET /messages`` with ``message_ids`` instead of a window."""
    rows = await conn.execute(
        query.select(message.c.id, query.flags().label("flags"))
        .where(message.c.id.in_(message_ids))
        .order_by(message.c.id)
    )
    return [(row.id, int(row.flags)) for row in rows]


async def narrow_matches(
    conn: AsyncConnection, query: NarrowQuery, message_ids: list[int]
) -> dict[str, dict[str, str]]:
    """``GET /messages/matches_narrow``'s answer: for each of ``message_ids`` that
    matches ``query``, by id as a string, its content and topic with the search's
    matches highlighted."""
    # Messages by their keys: SQLite looks them up in each table of the view by theirs.
    rows = await conn.execute(
        query.select(message.c.id, message.c.rendered_content, message.c.topic).where(
            message.c.id.in_(message_ids)
        )
    )
    return {
        str(row.id): {
            "match_content": highlight_html(row.rendered_content or "", query.search_queries),
            "match_subject": highlight_topic(row.topic, query.search_queries),
        }
        for row in rows
    }


@dataclass
class Window:
    rows: list[tuple[int, int]]  # (message id, flags), by id
    found_anchor: bool
    found_oldest: bool
    found_newest: bool


async def fetch_window(
    conn: AsyncConnection,
    query: NarrowQuery,
    anchor: int,
    *,
    include_anchor: bool,
    num_before: int,
    num_after: int,
) -> Window:
    """Up to ``num_before`` matches older than ``anchor``, the anchor itself (if it
    matches and ``include_anchor``), and up to ``num_after`` newer ones."""
    columns = (message.c.id, query.flags().label("flags"))
    anchored_left = anchor == 0
    anchored_right = anchor >= LARGER_THAN_MAX_MESSAGE_ID
    past_all = anchor > MAX_MESSAGE_ID
    before: list[tuple[int, int]] = []
    after: list[tuple[int, int]] = []
    at: list[tuple[int, int]] = []
    paging_before = bool(num_before) and not anchored_left
    paging_after = bool(num_after) and not past_all
    # Read once for both pages.
    estimate = await _search_estimate(conn, query) if paging_before or paging_after else None
    if paging_before:
        rows = await _page(
            conn,
            query,
            columns,
            estimate,
            below=None if past_all else anchor,
            limit=num_before,
        )
        before = rows[::-1]
    if include_anchor and not anchored_left and not past_all:
        # One message by its key: SQLite looks it up in each table of the view by theirs.
        rows = await conn.execute(query.select(*columns).where(message.c.id == anchor))
        at = [(mid, int(flags)) for mid, flags in rows]
    if paging_after:
        after = await _page(conn, query, columns, estimate, above=anchor, limit=num_after)
    return Window(
        rows=before + at + after,
        found_anchor=bool(at),
        found_oldest=anchored_left or len(before) < num_before,
        found_newest=anchored_right or len(after) < num_after,
    )


# How many search matches nearest the anchor a page first looks among (SQLite; see
# ``NarrowQuery.fts_driver``); None looks among all of them at once.
FTS_FIRST_WINDOW: int | None = 2_000


async def _page(
    conn: AsyncConnection,
    query: NarrowQuery,
    columns: tuple[Any, ...],
    estimate: SearchEstimate | None,
    *,
    above: int | None = None,
    below: int | None = None,
    limit: int,
) -> list[tuple[int, int]]:
    """Up to ``limit`` matches past ``above`` (oldest first) or before ``below`` (newest
    first), as (id, flags) in that order; ``estimate`` (PostgreSQL search) chooses the
    walk."""
    newest_first = above is None
    walked = _walk(
        query, estimate, above=above, below=below, newest_first=newest_first, limit=limit
    )
    if walked is not None:
        return await _rows(conn, query, *walked, newest_first=newest_first, limit=limit)
    if query.fts_driver is not None and FTS_FIRST_WINDOW is not None:
        found = await _fts_page(conn, query, columns, above=above, below=below, limit=limit)
        if found is not None:
            return found
    select = query.select(*columns, above=above, below=below)
    return await _rows(
        conn, query, select, query.order_id(), newest_first=newest_first, limit=limit
    )


# The user's rows as a second table in a search window's subquery.
_OWN = user_message.alias("own")


def own_matches(user_id: int, hits: sa.Select[Any]) -> sa.Select[Any]:
    """The ids among ``hits`` of messages the user has a row for."""
    return sa.select(_OWN.c.message_id).where(
        _OWN.c.user_profile_id == user_id,
        _OWN.c.message_id.in_(hits),
        # Always true (flags are NOT NULL), but it needs the row: the planner then looks
        # the matches up by the primary key, in the user's own range of pages, not in the
        # (message, user) index, narrower but with each match on a page of its own
        # (migration 0016 made the key cover the flags).
        _OWN.c.flags.is_not(None),
    )


async def _fts_page(
    conn: AsyncConnection,
    query: NarrowQuery,
    columns: tuple[Any, ...],
    *,
    above: int | None,
    below: int | None,
    limit: int,
) -> list[tuple[int, int]] | None:
    """``_page`` of a SQLite search: looks among the search's matches nearest the anchor,
    in windows widened until the page is full or a window holds every match; None where
    the plain query is the cheaper way on."""
    assert query.fts_driver is not None and FTS_FIRST_WINDOW is not None
    newest_first = above is None
    window = FTS_FIRST_WINDOW
    while True:
        hits = search_sqlite.nearest_hits(
            query.fts_driver[1], above=above, below=below, newest_first=newest_first, limit=window
        )
        # The user's rows among the window's matches (the index of (user, message)), then
        # only their messages. Looking up each match's message first, then the user's row,
        # stops at a full page but reads a message per match, several times the cost when
        # few of the matches are the user's; a full page costs a little more this way.
        # Stream history has no rows of the user's to look among.
        ids: Any = hits if query.include_history else own_matches(query.user.id, hits)
        select = query.select(*columns, above=above, below=below, fts_window=message.c.id.in_(ids))
        rows = await _rows(
            conn, query, select, query.order_id(), newest_first=newest_first, limit=limit
        )
        if len(rows) >= limit:
            return rows
        # Fewer than asked: final if the window held every match past the anchor.
        counted = long_read(sa.select(sa.func.count()).select_from(hits.subquery()))
        if int((await conn.execute(counted)).scalar_one()) < window:
            return rows
        if query.names_stream:
            # A stream's matches are sparse among the word's: wider windows would read a
            # large share of them. The stream's own index of messages, each checked
            # against every match, costs less than a wide window.
            return None
        window = _wider(window, len(rows), limit)


def _wider(window: int, found: int, limit: int) -> int:
    """The next search window after ``window`` found ``found`` of a page of ``limit``:
    twice what the window's share of the page's matches needs (more than double, as the
    page was not full), at most 25 times (a page with none)."""
    return int(window * min(2 * limit / max(found, 1), 25))


async def _rows(
    conn: AsyncConnection,
    query: NarrowQuery,
    select: sa.Select[Any],
    order_id: Any,
    *,
    newest_first: bool,
    limit: int,
) -> list[tuple[int, int]]:
    order = order_id.desc() if newest_first else order_id
    rows = [
        (mid, int(flags))
        for mid, flags in await narrow_rows(conn, query, select.order_by(order).limit(limit))
    ]
    # The tables' pages together: each message is in one of them.
    rows.sort(reverse=newest_first)
    return rows[:limit]


async def _search_estimate(conn: AsyncConnection, query: NarrowQuery) -> SearchEstimate | None:
    """PostgreSQL: what chooses the walk of a search of the user's own rows
    (``search.postgresql.estimate_search``), or None for the planner's plan."""
    if (
        conn.dialect.name != "postgresql"
        or not query.search_queries
        or query.negated_search
        or query.include_history
    ):
        return None
    return await search_postgresql.estimate_search(conn, query.search_queries)


def _walk(
    query: NarrowQuery,
    estimate: SearchEstimate | None,
    *,
    above: int | None,
    below: int | None,
    newest_first: bool,
    limit: int,
) -> tuple[sa.Select[Any], Any] | None:
    """The walk ``estimate`` favours for this page, or None for the planner's plan."""
    if estimate is None:
        return None
    if estimate.walk(limit) is Walk.INDEX:
        return query.walk_index(above=above, below=below, newest_first=newest_first, limit=limit)
    return query.walk_rows(above=above, below=below, newest_first=newest_first, limit=limit)


async def message_objects(
    conn: AsyncConnection,
    viewer: User,
    query: NarrowQuery,
    rows: list[tuple[int, int]],
    *,
    apply_markdown: bool,
    client_gravatar: bool,
    people: PeopleCache,
    realm_str: str | None = None,
    allow_empty_topic_name: bool = False,
) -> list[dict[str, Any]]:
    """The Zulip message objects of ``rows`` with ``flags``, plus ``match_content`` and
    ``match_subject`` for a search narrow; a stream message's empty topic shows as its
    display name unless the client allows empty topics (feature level 334)."""
    ids = [message_id for message_id, _ in rows]
    dicts = await get_message_dicts(
        conn,
        viewer,
        ids,
        apply_markdown=apply_markdown,
        client_gravatar=client_gravatar,
        realm_str=realm_str,
        people=people,
    )
    matches: dict[int, tuple[str, str]] = {}
    if query.search_queries and ids:
        for row in await conn.execute(
            sa.select(message.c.id, message.c.rendered_content, message.c.topic).where(
                message.c.id.in_(ids)
            )
        ):
            matches[row.id] = (
                highlight_html(row.rendered_content or "", query.search_queries),
                highlight_topic(row.topic, query.search_queries),
            )
    result = []
    for message_id, flags in rows:
        item = dicts.get(message_id)
        if item is None:
            continue
        item = {
            **message_for_client(item, allow_empty_topic_name=allow_empty_topic_name),
            "flags": flag_names(flags),
        }
        if message_id in matches:
            item["match_content"], item["match_subject"] = matches[message_id]
        result.append(item)
    return result
