"""PostgreSQL full-text search: the generated column ``message.search_tsvector``."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

# The same text search configuration as the generated column (migration 0006); a literal
# so that it is a regconfig, not a text parameter.
CONFIG: ColumnElement[object] = sa.literal_column("'english'::regconfig")
search_vector: ColumnElement[object] = sa.literal_column("message.search_tsvector")


def search_condition(query: str) -> ColumnElement[bool]:
    # websearch_to_tsquery ANDs the words and keeps "quoted phrases" as phrases.
    return search_vector.op("@@")(sa.func.websearch_to_tsquery(CONFIG, sa.literal(query)))
