"""Full-text search over message topics and contents, one module per dialect.

SQLite uses an FTS5 external-content table (``message_fts``, Porter stemming), PostgreSQL a
generated ``tsvector`` column with a GIN index (English stemming), both kept current by the
database itself (migration 0006). Highlighting is done here, the same for both, on the
rendered HTML and the escaped topic, as Zulip's ``match_content``/``match_subject``.
"""

from __future__ import annotations

import functools
import html
import re

from sqlalchemy.sql.elements import ColumnElement

from hubbub.search import postgresql, sqlite

_WORD = re.compile(r"\w+")
# Tags and character references are never highlighted inside.
_MARKUP = re.compile(r"(<[^>]*>|&#?\w+;)")
# Crude English suffixes, so that "running" highlights "run" as the stemmers match it.
_SUFFIXES = ("ing", "ed", "es", "s")


def search_condition(dialect: str, query: str) -> ColumnElement[bool]:
    """Messages whose topic or content match every word (or quoted phrase) of ``query``."""
    if dialect == "postgresql":
        return postgresql.search_condition(query)
    return sqlite.search_condition(query)


def _stems(queries: list[str]) -> list[str]:
    stems = []
    for query in queries:
        for word in _WORD.findall(query.lower()):
            for suffix in _SUFFIXES:
                if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                    word = word[: -len(suffix)]
                    # "running" -> "runn" -> "run", so that "runs" matches too.
                    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":
                        word = word[:-1]
                    break
            stems.append(word)
    return stems


@functools.lru_cache(maxsize=64)
def _stem_pattern(queries: tuple[str, ...]) -> re.Pattern[str] | None:
    """Whole words that start with a stem of ``queries``, in any case (None: no words).
    One regular expression rather than a Python call for every word of the text, made
    once for all the messages of a page."""
    stems = _stems(list(queries))
    if not stems:
        return None
    alternatives = "|".join(re.escape(stem) for stem in dict.fromkeys(stems))
    return re.compile(rf"(?<!\w)(?:{alternatives})\w*", re.IGNORECASE)


_HIGHLIGHTED = r'<span class="highlight">\g<0></span>'


def highlight_html(rendered: str, queries: list[str]) -> str:
    """``rendered`` with matching words wrapped in ``<span class="highlight">``."""
    pattern = _stem_pattern(tuple(queries))
    if pattern is None:
        return rendered
    parts = _MARKUP.split(rendered)
    return "".join(
        part if index % 2 else pattern.sub(_HIGHLIGHTED, part) for index, part in enumerate(parts)
    )


def highlight_topic(topic: str, queries: list[str]) -> str:
    """The HTML-escaped topic with matching words highlighted."""
    return highlight_html(html.escape(topic, quote=False), queries)
