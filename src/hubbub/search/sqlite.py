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


def search_condition(query: str) -> ColumnElement[bool]:
    match = fts_query(query)
    if not match:
        return sa.false()
    hits = (
        sa.select(message_fts.c.rowid)
        .select_from(message_fts)
        .where(sa.literal_column("message_fts").op("MATCH")(sa.literal(match)))
    )
    return message.c.id.in_(hits)
