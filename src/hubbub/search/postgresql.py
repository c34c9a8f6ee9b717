"""PostgreSQL full-text search: the generated column ``message.search_tsvector``, and which
way a page of a user's matches is found.

A search of a user's messages can walk the user's rows newest first, checking each
message (cheap for a common word: the page fills within a few rows), or read every match
of the realm from the GIN index and keep the user's (cheap for a rare word). PostgreSQL's
planner takes a third way for most words, a backward walk of every message of the realm,
because it costs each ``@@`` test at almost nothing; on a large realm that takes several
times as long as either walk (bench/results/search.md).
``estimate_search`` and ``SearchEstimate.walk`` pick between the two from the planner
statistics' word frequencies.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from enum import Enum

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

# The same text search configuration as the generated column (migration 0006); a literal
# so that it is a regconfig, not a text parameter.
CONFIG: ColumnElement[object] = sa.literal_column("'english'::regconfig")
search_vector: ColumnElement[object] = sa.literal_column("message.search_tsvector")


def search_condition(query: str) -> ColumnElement[bool]:
    # websearch_to_tsquery ANDs the words and keeps "quoted phrases" as phrases.
    return search_vector.op("@@")(sa.func.websearch_to_tsquery(CONFIG, sa.literal(query)))


class Walk(Enum):
    ROWS = "rows"  # the user's rows, newest first, each message checked
    INDEX = "index"  # the GIN index's matches, each checked for a row of the user


# The statistics change slowly (ANALYZE, by autovacuum); re-read them this often.
STATISTICS_SECONDS = 600.0


@dataclass(frozen=True)
class _Statistics:
    read_at: float
    messages: float
    frequencies: dict[str, float]
    # Words outside the most common ones are at most this frequent.
    floor: float


_statistics: _Statistics | None = None

_STATISTICS = sa.text(
    "SELECT c.reltuples, s.most_common_elems::text::text[], s.most_common_elem_freqs "
    "FROM pg_class c LEFT JOIN pg_stats s ON s.schemaname = current_schema() "
    "AND s.tablename = 'message' AND s.attname = 'search_tsvector' "
    "WHERE c.oid = 'message'::regclass"
)


async def _get_statistics(conn: AsyncConnection) -> _Statistics | None:
    global _statistics
    now = time.monotonic()
    if _statistics is None or now - _statistics.read_at > STATISTICS_SECONDS:
        row = (await conn.execute(_STATISTICS)).one()
        messages, words, frequencies = row
        if not words or not frequencies or messages is None or messages <= 0:
            # Never analyzed: the planner decides, as it would without this module.
            _statistics = _Statistics(now, 0.0, {}, 0.0)
        else:
            # For a tsvector the element frequencies are followed by their minimum and
            # maximum (PostgreSQL's ts_typanalyze).
            listed = frequencies[: len(words)]
            _statistics = _Statistics(
                now, float(messages), dict(zip(words, listed, strict=True)), min(listed)
            )
    return _statistics if _statistics.messages > 0 else None


_LEXEMES = sa.text(
    "SELECT querytree(websearch_to_tsquery('english'::regconfig, q)) "
    "FROM unnest(CAST(:queries AS text[])) AS q"
)
_QUOTED = re.compile(r"'((?:[^']|'')*)'")


def query_lexemes(tree: str) -> list[str] | None:
    """The words of a ``querytree`` that all must match, or None for one the choice does
    not cover: an OR, or no indexable word ("T"). ``querytree`` leaves negated words out
    (they only remove matches)."""
    operators = _QUOTED.sub("", tree)
    if tree.strip() in ("", "T") or "|" in operators or "!" in operators:
        return None
    return [word.replace("''", "'") for word in _QUOTED.findall(tree)]


def walk_for(
    lexemes: list[str], frequencies: dict[str, float], floor: float, messages: float, limit: int
) -> Walk:
    """The cheaper walk for a page of ``limit`` matches of all of ``lexemes``.

    With f the share of messages that match (the words taken as independent), the index
    walk visits f x messages matches, the row walk about limit / f of the user's rows (a
    user receives a like share of the matches); each costs one random page read."""
    share = math.prod(frequencies.get(word, floor) for word in lexemes)
    return Walk.INDEX if share * share * messages <= limit else Walk.ROWS


@dataclass(frozen=True)
class SearchEstimate:
    """The words of a search that all must match, with the statistics to weigh them."""

    lexemes: tuple[str, ...]
    statistics: _Statistics

    def walk(self, limit: int) -> Walk:
        """How to find a page of ``limit`` matches (``walk_for``)."""
        found = self.statistics
        return walk_for(list(self.lexemes), found.frequencies, found.floor, found.messages, limit)


async def estimate_search(conn: AsyncConnection, queries: list[str]) -> SearchEstimate | None:
    """What choosing a walk for the search of all of ``queries`` needs (one statement, the
    query's words; the statistics are kept), or None to leave the pages to the planner
    (never analyzed, or a query with OR)."""
    statistics = await _get_statistics(conn)
    if statistics is None:
        return None
    lexemes: list[str] = []
    for (tree,) in await conn.execute(_LEXEMES, {"queries": queries}):
        words = query_lexemes(tree or "")
        if words is None:
            return None
        lexemes.extend(words)
    return SearchEstimate(tuple(lexemes), statistics)
