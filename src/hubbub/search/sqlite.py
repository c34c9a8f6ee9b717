"""SQLite full-text search: the FTS5 table ``message_fts`` (rowid = message id)."""

from __future__ import annotations

import re

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from hubbub.db.tables import message

_PHRASE_OR_WORD = re.compile(r'"([^"]*)"|([^\s"]+)')
_WORD = re.compile(r"\w+")

message_fts = sa.table("message_fts", sa.column("rowid"))


def fts_query(query: str) -> str:
    """An FTS5 query matching every word and quoted phrase of ``query`` (each quoted,
    so user text never reaches FTS5's own syntax), or "" when it has no words."""
    parts = []
    for phrase, word in _PHRASE_OR_WORD.findall(query):
        words = _WORD.findall(phrase or word)
        if words:
            parts.append('"' + " ".join(words) + '"')
    return " ".join(parts)


def _hits(match: str) -> sa.Select[tuple[int]]:
    return (
        sa.select(message_fts.c.rowid)
        .select_from(message_fts)
        .where(sa.literal_column("message_fts").op("MATCH")(sa.literal(match)))
    )


def search_condition(query: str) -> ColumnElement[bool]:
    match = fts_query(query)
    if not match:
        return sa.false()
    return message.c.id.in_(_hits(match))


def nearest_hits(
    match: str, *, above: int | None, below: int | None, newest_first: bool, limit: int
) -> sa.Select[tuple[int]]:
    """The ``limit`` matches nearest the anchor: FTS5 walks its index in rowid order from
    the bound and stops, where the plain condition collects every match first, seconds
    for a common word in a large realm."""
    hits = _hits(match)
    if above is not None:
        hits = hits.where(message_fts.c.rowid > above)
    if below is not None:
        hits = hits.where(message_fts.c.rowid < below)
    order = message_fts.c.rowid.desc() if newest_first else message_fts.c.rowid.asc()
    return hits.order_by(order).limit(limit)
