"""Full-text search on both dialects (the index follows inserts, edits and deletes) and
Zulip-style highlighting."""

from __future__ import annotations

import pytest

from hubbub.db.tables import message
from hubbub.narrow import parse_narrow
from hubbub.narrow_sql import build_narrow_query
from hubbub.queries import message_fetch
from hubbub.search import highlight_html, highlight_topic
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


async def test_pages_of_search_results_look_near_the_anchor_first(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite a page of search results looks among the matches nearest its anchor,
    widening the window until the page is full or the matches run out; the pages must be
    those of the plain query, whatever the window sizes."""
    await env.subscribe("hamlet", "Verona")
    await env.subscribe("othello", "Verona")
    await env.subscribe("othello", "Denmark")
    sent = []
    for n in range(24):
        # Every message says "lunch"; hamlet receives only the Verona ones (two in three),
        # and every fourth also says "tea".
        stream = "Denmark" if n % 3 == 0 else "Verona"
        words = "lunch tea" if n % 4 == 0 else "lunch"
        sent.append(await send_stream_message(env, "othello", stream, f"{words} {n}"))
    client = env.client("hamlet")

    async def pages() -> list[list[int]]:
        found = []
        for text in ("lunch", "tea lunch", "nothing"):
            for anchor, before, after in (
                ("newest", 5, 0),
                ("oldest", 0, 5),
                (str(sent[12]), 3, 3),
                (str(sent[1]), 7, 2),
                ("newest", 40, 0),
            ):
                params = {
                    "anchor": anchor,
                    "num_before": before,
                    "num_after": after,
                    "narrow": [{"operator": "search", "operand": text}],
                }
                body = assert_success(await client.get("/messages", params))
                found.append([m["id"] for m in body["messages"]])
        return found

    # The plain query: no windows at all.
    monkeypatch.setattr(message_fetch, "FTS_WINDOWS", ())
    plain = await pages()
    assert plain[0] == [m for n, m in enumerate(sent) if n % 3][-5:]
    for windows in ((1,), (2, 3), (4, 50)):
        monkeypatch.setattr(message_fetch, "FTS_WINDOWS", windows)
        assert await pages() == plain, windows
