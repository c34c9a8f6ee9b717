"""Full-text search on both dialects (the index follows inserts, edits and deletes) and
Zulip-style highlighting."""

from __future__ import annotations

from hubbub.db.tables import message
from hubbub.narrow import parse_narrow
from hubbub.narrow_sql import build_narrow_query
from hubbub.search import highlight_html, highlight_topic
from hubbub.search.sqlite import fts_query
from tests.helpers import TestEnv
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
