"""Long content is rendered in a worker thread wherever a message is written (sends, edits,
scheduled messages), as ``POST /messages/render`` does, so that a long or hostile message
does not hold the event loop; the HTML is the same either way."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hubbub import rendering
from hubbub.clock import FakeClock
from hubbub.markdown import RenderContext, RenderResult, render_markdown
from hubbub.settings import Settings
from tests.helpers import TestEnv, assert_success, running_env

NOW = 1_700_000_000
LONG = "**Hello** @**Othello** [a link](https://example.com) `code` " * 60
SHORT = "**Hello** @**Othello**"


@pytest.fixture
async def env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings, clock=FakeClock(float(NOW))) as test_env:
        yield test_env


@pytest.fixture
def render_threads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """(content length, whether it rendered on the main thread) of every render."""
    seen: list[tuple[int, bool]] = []

    def recording(content: str, ctx: RenderContext) -> RenderResult:
        seen.append((len(content), threading.current_thread() is threading.main_thread()))
        return render_markdown(content, ctx)

    monkeypatch.setattr(rendering, "render_markdown", recording)
    return seen


async def _write_everything(env: TestEnv, content: str) -> list[str]:
    """Send, edit and schedule ``content``; the HTML each stored."""
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    client = env.client("hamlet")
    stream_message: dict[str, Any] = {"type": "stream", "to": denmark.id, "topic": "t"}
    sent = assert_success(await client.post("/messages", {**stream_message, "content": "x"}))
    assert_success(await client.patch(f"/messages/{sent['id']}", {"content": content}))
    edited = assert_success(await client.get(f"/messages/{sent['id']}"))["message"]["content"]
    direct = assert_success(
        await client.post(
            "/messages", {"type": "direct", "to": [env.users["othello"].id], "content": content}
        )
    )
    sent_direct = assert_success(await client.get(f"/messages/{direct['id']}"))["message"]
    htmls = [edited, sent_direct["content"]]
    for target in (stream_message, {"type": "direct", "to": [env.users["othello"].id]}):
        assert_success(
            await client.post(
                "/scheduled_messages",
                {**target, "content": content, "scheduled_delivery_timestamp": NOW + 600},
            )
        )
    scheduled = assert_success(await client.get("/scheduled_messages"))["scheduled_messages"]
    newest = sorted(scheduled, key=lambda s: s["scheduled_message_id"])[-2:]
    htmls += [s["rendered_content"] for s in newest]
    return htmls


async def test_long_content_renders_in_a_worker_thread(
    env: TestEnv, render_threads: list[tuple[int, bool]]
) -> None:
    threaded = await _write_everything(env, LONG)
    long_renders = [on_main for length, on_main in render_threads if length == len(LONG.strip())]
    # The edit, the direct send and the two scheduled messages.
    assert long_renders == [False] * 4
    assert all(on_main for length, on_main in render_threads if length < 100)
    # The same HTML as rendered on the loop.
    render_threads.clear()
    inline = await _write_everything_inline(env)
    assert inline == threaded
    assert render_threads and all(on_main for _, on_main in render_threads)


async def _write_everything_inline(env: TestEnv) -> list[str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rendering, "_RENDER_INLINE_BELOW", 10**9)
        return await _write_everything(env, LONG)


async def test_a_long_stream_send_renders_in_a_worker_thread(
    env: TestEnv, render_threads: list[tuple[int, bool]]
) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    client = env.client("hamlet")
    body = {"type": "stream", "to": denmark.id, "topic": "t", "content": LONG}
    sent = assert_success(await client.post("/messages", body))
    assert render_threads == [(len(LONG.strip()), False)]
    short = assert_success(await client.post("/messages", {**body, "content": SHORT}))
    assert render_threads[1:] == [(len(SHORT), True)]
    message = assert_success(await client.get(f"/messages/{sent['id']}"))["message"]
    assert message["content"].count("<strong>Hello</strong>") == 60
    assert_success(await client.get(f"/messages/{short['id']}"))
