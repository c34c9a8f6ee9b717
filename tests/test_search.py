"""Full-text search on both dialects (the index follows inserts, edits and deletes) and
Zulip-style highlighting."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub import search
from hubbub.db.tables import message, user_message
from hubbub.queries import message_fetch
from hubbub.queries.narrow import parse_narrow
from hubbub.queries.narrow_sql import build_narrow_query
from hubbub.search import highlight_html, highlight_topic
from hubbub.search import postgresql as search_postgresql
from hubbub.search import sqlite as search_sqlite
from hubbub.search.postgresql import Walk, query_lexemes, walk_for
from hubbub.search.sqlite import fts_query
from tests.helpers import TestEnv, assert_success
from tests.messages_helpers import send_stream_message


def test_fts_query_quotes_words_and_phrases() -> None:
    assert fts_query('lunch "new york" OR x*') == '"lunch" "new york" "OR" "x"'
    assert fts_query("  ...  ") == ""


def test_highlight_html_skips_markup() -> None:
    rendered = '<p>Lunch at <a href="https://lunch.example">the lunch place</a> &amp; more</p>'
    assert highlight_html(rendered, ["lunch"]) == (
        '<p><span class="highlight">Lunch</span> at <a href="https://lunch.example">the'
        ' <span class="highlight">lunch</span> place</a> &amp; more</p>'
    )
    assert highlight_html("<p>amp</p>", ["amp"]) == '<p><span class="highlight">amp</span></p>'


def test_highlight_stems_and_topics() -> None:
    assert highlight_html("<p>runs and running</p>", ["running"]) == (
        '<p><span class="highlight">runs</span> and <span class="highlight">running</span></p>'
    )
    assert (
        highlight_topic("<b> lunch", ["lunch"]) == '&lt;b&gt; <span class="highlight">lunch</span>'
    )
    assert highlight_topic("plain", []) == "plain"


def test_highlight_marks_every_word_that_starts_with_a_stem() -> None:
    """The one regular expression marks exactly the words (runs of word characters) whose
    lower case starts with a stem of the query, whatever the case or letters. (It folds
    case letter by letter: a final sigma matches any sigma, where ``str.lower`` of a word
    chooses by position; that case is left out.)"""
    rng = random.Random(7)
    letters = "abcrunRUNéÉßЖж_1"
    for _ in range(300):
        words = ["".join(rng.choices(letters, k=rng.randint(1, 7))) for _ in range(8)]
        text = " ".join(words) + "-" + "".join(words[:2])
        query = " ".join(rng.sample(words, 2))
        stems = search._stems([query])

        def mark(word: re.Match[str], stems: list[str] = stems) -> str:
            if any(word[0].lower().startswith(stem) for stem in stems):
                return f'<span class="highlight">{word[0]}</span>'
            return word[0]

        expected = re.sub(r"\w+", mark, text)
        assert highlight_html(text, [query]) == expected, (text, query)


async def _search(env: TestEnv, user: str, text: str) -> list[int]:
    async with env.services.db.read() as conn:
        query = await build_narrow_query(
            conn, env.users[user], parse_narrow([["stream", "Verona"], ["search", text]])
        )
        rows = await conn.execute(query.select(message.c.id).order_by(message.c.id))
        return [r.id for r in rows]


async def test_index_follows_inserts_edits_and_deletes(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Verona")
    a = await send_stream_message(env, "hamlet", "Verona", "Lunch is ready", topic="food")
    b = await send_stream_message(env, "hamlet", "Verona", "Meeting at noon", topic="work")
    assert await _search(env, "hamlet", "lunch") == [a]
    assert await _search(env, "hamlet", "meetings") == [b]  # stemmed
    assert await _search(env, "hamlet", "work") == [b]  # the topic is indexed
    assert await _search(env, "hamlet", "lunch ready") == [a]  # every word
    assert await _search(env, "hamlet", "lunch noon") == []
    assert await _search(env, "hamlet", '"ready lunch"') == []  # phrases keep word order
    assert await _search(env, "hamlet", '"lunch is ready"') == [a]
    async with env.services.db.write() as conn:
        await conn.execute(
            message.update().where(message.c.id == a).values(content="Dinner", topic="evening")
        )
    assert await _search(env, "hamlet", "lunch") == []
    assert await _search(env, "hamlet", "dinner evening") == [a]
    async with env.services.db.write() as conn:
        await conn.execute(message.delete().where(message.c.id == b))
    assert await _search(env, "hamlet", "meeting") == []
    # Not-yet-subscribed readers of a public stream search its history too.
    assert await _search(env, "othello", "dinner") == [a]
    assert await _search(env, "hamlet", "...") == []


async def _lunch_messages(env: TestEnv) -> list[int]:
    """24 messages from othello: every one says "lunch", every fourth also "tea"; hamlet
    receives only the Verona ones (two in three)."""
    await env.subscribe("hamlet", "Verona")
    await env.subscribe("othello", "Verona")
    await env.subscribe("othello", "Denmark")
    sent = []
    for n in range(24):
        stream = "Denmark" if n % 3 == 0 else "Verona"
        words = "lunch tea" if n % 4 == 0 else "lunch"
        sent.append(await send_stream_message(env, "othello", stream, f"{words} {n}"))
    return sent


async def _pages(
    client: Any, narrows: list[list[dict[str, Any]]], anchors: list[tuple[str, int, int]]
) -> list[list[tuple[int, list[str]]]]:
    """(id, flags) of each page: every narrow at every (anchor, num_before, num_after)."""
    found = []
    for narrow in narrows:
        for anchor, before, after in anchors:
            params = {
                "anchor": anchor,
                "num_before": before,
                "num_after": after,
                "narrow": narrow,
            }
            body = assert_success(await client.get("/messages", params))
            found.append([(m["id"], sorted(m["flags"])) for m in body["messages"]])
    return found


async def test_pages_of_search_results_look_near_the_anchor_first(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite a page of search results looks among the matches nearest its anchor,
    widening the window until the page is full or the matches run out; the pages must be
    those of the plain query, whatever the window sizes, with a stream's history (hamlet
    is not subscribed to Denmark) and with other terms."""
    sent = await _lunch_messages(env)
    client = env.client("hamlet")
    starred = [sent[4], sent[5], sent[16]]
    assert_success(
        await client.post("/messages/flags", {"messages": starred, "op": "add", "flag": "starred"})
    )
    narrows = [
        [{"operator": "search", "operand": text}] for text in ("lunch", "tea lunch", "nothing")
    ]
    narrows += [
        [{"operator": "stream", "operand": "Denmark"}, {"operator": "search", "operand": "lunch"}],
        [{"operator": "stream", "operand": "Verona"}, {"operator": "search", "operand": "tea"}],
        [{"operator": "is", "operand": "starred"}, {"operator": "search", "operand": "lunch"}],
    ]
    anchors = [
        ("newest", 5, 0),
        ("oldest", 0, 5),
        (str(sent[12]), 3, 3),
        (str(sent[1]), 7, 2),
        ("newest", 40, 0),
    ]
    # The plain query: no windows at all.
    monkeypatch.setattr(message_fetch, "FTS_FIRST_WINDOW", None)
    plain = await _pages(client, narrows, anchors)
    pages = len(anchors)
    assert [m for m, _ in plain[0]] == [m for n, m in enumerate(sent) if n % 3][-5:]
    assert [m for m, _ in plain[3 * pages]] == sent[::3][-5:]  # history: all of Denmark's
    assert [m for m, _ in plain[5 * pages + 4]] == starred
    windows: list[int] = []
    nearest_hits = search_sqlite.nearest_hits

    def counted(match: str, **kwargs: Any) -> Any:
        windows.append(kwargs["limit"])
        return nearest_hits(match, **kwargs)

    monkeypatch.setattr(search_sqlite, "nearest_hits", counted)
    assert await _pages(client, narrows, anchors) == plain
    assert not windows  # the plain query took no windows
    for window in (1, 2, 3, 50):
        monkeypatch.setattr(message_fetch, "FTS_FIRST_WINDOW", window)
        assert await _pages(client, narrows, anchors) == plain, window
        # SQLite pages did look among windows, widened past a first one smaller than the
        # 24 matches (PostgreSQL has its own walks).
        sqlite = env.services.db.is_sqlite
        assert (window in windows) is sqlite, windows
        assert (bool(windows) and max(windows) > window) is (sqlite and window < 24), windows
        windows.clear()


def test_search_windows_widen_by_the_share_found() -> None:
    # 2,000 matches held 5 of a page of 50: 20 times as many; none: 25 times; 40: 2.5.
    assert message_fetch._wider(2_000, 5, 50) == 40_000
    assert message_fetch._wider(2_000, 0, 50) == 50_000
    assert message_fetch._wider(2_000, 40, 50) == 5_000
    assert message_fetch._wider(1, 0, 50) == 25


def test_query_lexemes_cover_only_words_that_must_match() -> None:
    assert query_lexemes("'lunch' & 'tea'") == ["lunch", "tea"]
    assert query_lexemes("'new' <-> 'york'") == ["new", "york"]
    assert query_lexemes("'o''neil'") == ["o'neil"]
    assert query_lexemes("'lunch' | 'tea'") is None
    assert query_lexemes("'lunch' & !'tea'") is None
    assert query_lexemes("T") is None
    assert query_lexemes("") is None


def test_walk_for_weighs_matches_against_rows() -> None:
    frequencies = {"common": 0.2, "medium": 0.01, "often": 0.05}
    # A page of 50 among 1,000,000 messages: the row walk reads ~50 / f rows, the index
    # walk f x 1,000,000 matches.
    assert walk_for(["common"], frequencies, 0.002, 1e6, 50) is Walk.ROWS
    assert walk_for(["medium"], frequencies, 0.002, 1e6, 50) is Walk.ROWS
    assert walk_for(["unlisted"], frequencies, 0.002, 1e6, 50) is Walk.INDEX
    # Both words must match: together they are rare.
    assert walk_for(["often", "medium"], frequencies, 0.002, 1e6, 50) is Walk.INDEX


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_postgresql_walks_give_the_planner_pages(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL finds a page of a user's search results by walking their rows or the
    index's matches (search/postgresql.py); either walk must give the planner's pages,
    flags included."""
    sent = await _lunch_messages(env)
    sent.append(await send_stream_message(env, "hamlet", "Verona", "lunch from hamlet"))
    client = env.client("hamlet")
    starred = [sent[4], sent[8]]
    assert_success(
        await client.post("/messages/flags", {"messages": starred, "op": "add", "flag": "starred"})
    )
    narrows = [
        [{"operator": "search", "operand": "lunch"}],
        [{"operator": "search", "operand": "tea lunch"}],
        [
            {"operator": "search", "operand": "lunch"},
            {"operator": "sender", "operand": env.users["hamlet"].email},
        ],
        [{"operator": "search", "operand": "lunch"}, {"operator": "is", "operand": "starred"}],
        [{"operator": "search", "operand": "nothing"}],
    ]

    anchors = [("newest", 5, 0), ("oldest", 0, 5), (str(sent[12]), 3, 3), ("newest", 40, 0)]

    estimates: list[list[str]] = []

    async def planner(conn: Any, queries: list[str]) -> None:
        estimates.append(queries)
        return None

    monkeypatch.setattr(search_postgresql, "estimate_search", planner)
    plain = await _pages(client, narrows, anchors)
    # hamlet receives the Verona messages (two in three) and his own.
    received = [m for n, m in enumerate(sent[:24]) if n % 3] + [sent[24]]
    assert [m for m, _ in plain[0]] == received[-5:]
    assert (sent[8], ["starred"]) in plain[3]
    # One estimate a request, though the anchored one pages both ways.
    assert len(estimates) == len(narrows) * len(anchors)

    class Forced:
        def __init__(self, walk: Walk) -> None:
            self.forced = walk

        def walk(self, limit: int) -> Walk:
            return self.forced

    for walk in (Walk.ROWS, Walk.INDEX):

        async def forced(conn: Any, queries: list[str], walk: Walk = walk) -> Forced:
            return Forced(walk)

        monkeypatch.setattr(search_postgresql, "estimate_search", forced)
        assert await _pages(client, narrows, anchors) == plain, walk


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_postgresql_walks_read_flags_of_the_page_only(env: TestEnv) -> None:
    """A walk finds its page by the user's primary key alone (an index-only lookup);
    only the page's rows are read for their flags. With the flags inside the walk each
    row walked cost a page of ``user_message`` (bench/results/postgresql.md)."""
    async with env.services.db.read() as conn:
        query = await build_narrow_query(
            conn, env.users["hamlet"], parse_narrow([["search", "lunch"]])
        )
    for walk in (query.walk_rows, query.walk_index):
        walked = walk(above=None, below=10, newest_first=True, limit=5)
        assert walked is not None
        select, order = walked
        page = order.table
        assert isinstance(page, sa.Subquery)
        used = {
            element.name
            for element in sa.sql.visitors.iterate(page.element)
            if isinstance(element, sa.Column) and element.table is user_message
        }
        assert used == {"user_profile_id", "message_id"}, walk
        # The page's flags come from the outer join, for the page's ids.
        assert [column.name for column in select.selected_columns] == ["id", "flags"]


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_postgresql_chooses_a_walk_from_the_statistics(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    await env.subscribe("hamlet", "Verona")
    for n in range(30):
        await send_stream_message(env, "hamlet", "Verona", f"lunch {n}")
    monkeypatch.setattr(search_postgresql, "_statistics", None)
    async with env.services.db.read() as conn:

        async def choose(queries: list[str], limit: int) -> Walk | None:
            estimate = await search_postgresql.estimate_search(conn, queries)
            return None if estimate is None else estimate.walk(limit)

        # Never analyzed: the planner decides.
        assert await choose(["lunch"], 5) is None
        monkeypatch.setattr(search_postgresql, "_statistics", None)
        await conn.execute(sa.text("ANALYZE message"))
        # Every message says lunch: 30 matches cost more than the ~5 rows that fill a page
        # of five; a page of 50 holds all 30 matches, which the index reads directly.
        assert await choose(["lunch"], 5) is Walk.ROWS
        assert await choose(["lunch"], 50) is Walk.INDEX
        assert await choose(["lunch or tea"], 5) is None
        # querytree leaves a negated word out: it only removes matches.
        assert await choose(["lunch -tea"], 5) is Walk.ROWS
