"""The words full-text search leaves out of a query, which ``/register`` reports as
``stop_words`` so that a client can tell its user why a word matched nothing.

Each dialect answers for its own search: SQLite's FTS5 table (Porter stemming over the
``unicode61`` tokenizer) indexes every word, so it drops none; PostgreSQL's ``english``
text-search configuration drops the words of its ``english.stop`` dictionary file, listed
here (tests/api/test_register_10.py checks the list against the server's own file).
"""

from __future__ import annotations

# PostgreSQL's english.stop, in the file's order.
POSTGRESQL_ENGLISH_STOP_WORDS: tuple[str, ...] = (
    "i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "your", "yours",
    "yourself", "yourselves", "he", "him", "his", "himself", "she", "her", "hers",
    "herself", "it", "its", "itself", "they", "them", "their", "theirs", "themselves",
    "what", "which", "who", "whom", "this", "that", "these", "those", "am", "is", "are",
    "was", "were", "be", "been", "being", "have", "has", "had", "having", "do", "does",
    "did", "doing", "a", "an", "the", "and", "but", "if", "or", "because", "as", "until",
    "while", "of", "at", "by", "for", "with", "about", "against", "between", "into",
    "through", "during", "before", "after", "above", "below", "to", "from", "up", "down",
    "in", "out", "on", "off", "over", "under", "again", "further", "then", "once", "here",
    "there", "when", "where", "why", "how", "all", "any", "both", "each", "few", "more",
    "most", "other", "some", "such", "no", "nor", "not", "only", "own", "same", "so",
    "than", "too", "very", "s", "t", "can", "will", "just", "don", "should", "now",
)  # fmt: skip


def stop_words(dialect: str) -> list[str]:
    """The words the search of ``dialect`` (a SQLAlchemy dialect name) ignores."""
    if dialect == "postgresql":
        return list(POSTGRESQL_ENGLISH_STOP_WORDS)
    return []
