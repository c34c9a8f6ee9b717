"""Rendering through the API: placeholder markers in user text, oversized previews, and
linkifiers whose URL templates name a script scheme."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.clock import FakeClock
from hubbub.db.tables import realm_linkifier
from hubbub.settings import Settings
from tests.helpers import TestEnv, assert_error, assert_success, running_env
from tests.xss_corpus import problems

NOW = 1_700_000_000
MARKERS = [
    "\x02stash0\x03",
    "\x02stash99\x03",
    "```\nx\n```\n[a](https://x.example/\x02stash0\x03)",
]


@pytest.fixture
async def env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings, clock=FakeClock(float(NOW))) as test_env:
        yield test_env


async def test_placeholder_markers_in_previews(env: TestEnv) -> None:
    client = env.client("hamlet")
    for content in MARKERS:
        rendered = assert_success(await client.post("/messages/render", {"content": content}))[
            "rendered"
        ]
        assert "\x02" not in rendered and "\x03" not in rendered
    assert '<a href="https://x.example/stash0">a</a>' in rendered


async def test_placeholder_markers_in_sends_edits_and_scheduled_sends(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    client = env.client("hamlet")
    for content in MARKERS:
        stream_message: dict[str, Any] = {"type": "stream", "to": denmark.id, "topic": "t"}
        sent = assert_success(
            await client.post("/messages", {**stream_message, "content": content})
        )
        assert_success(await client.patch(f"/messages/{sent['id']}", {"content": content + "!"}))
        fetched = assert_success(await client.get(f"/messages/{sent['id']}"))["message"]
        assert "\x02" not in fetched["content"]
        assert_success(
            await client.post(
                "/messages",
                {"type": "direct", "to": [env.users["othello"].id], "content": content},
            )
        )
        assert_success(
            await client.post(
                "/scheduled_messages",
                {
                    **stream_message,
                    "content": content,
                    "scheduled_delivery_timestamp": NOW + 600,
                },
            )
        )


async def test_oversized_preview_is_cut_at_the_message_limit(env: TestEnv) -> None:
    client = env.client("hamlet")
    rendered = assert_success(await client.post("/messages/render", {"content": "[" * 20000}))[
        "rendered"
    ]
    assert rendered == "<p>" + "[" * 9980 + "<br>\n[message truncated]</p>"


@pytest.mark.parametrize(
    "template",
    [
        "javascript:alert({id})",
        "JavaScript:alert({id})",
        "data:text/html,{id}",
        "vbscript:msgbox({id})",
        "java\tscript:alert({id})",
    ],
)
async def test_script_url_templates_are_refused(env: TestEnv, template: str) -> None:
    response = await env.client("iago").post(
        "/realm/filters", {"pattern": "#(?P<id>[0-9]+)", "url_template": template}
    )
    body = assert_error(response, "Invalid URL template.")
    assert body["errors"] == {"url_template": ["Invalid URL template."]}


@pytest.mark.parametrize(
    "template", ["https://t.example/{id}", "http://t/{id}", "mailto:{id}@x.example", "/t/{id}"]
)
async def test_link_url_templates_are_accepted(env: TestEnv, template: str) -> None:
    assert_success(
        await env.client("iago").post(
            "/realm/filters", {"pattern": "#(?P<id>[0-9]+)", "url_template": template}
        )
    )


async def test_stored_script_linkifiers_never_link(env: TestEnv) -> None:
    realm_id = env.users["iago"].realm_id
    for order, template in enumerate(["javascript:alert({id})", "data:text/html,{id}"]):
        await env.write_elsewhere(
            sa.insert(realm_linkifier).values(
                realm_id=realm_id,
                pattern=f"L{order}-(?P<id>[0-9]+)",
                url_template=template,
                order=order,
            )
        )
    denmark = await env.subscribe("hamlet", "Denmark")
    client = env.client("hamlet")
    sent = assert_success(
        await client.post(
            "/messages",
            {"type": "stream", "to": denmark.id, "topic": "L0-1 L1-2", "content": "L0-3 L1-4"},
        )
    )["id"]
    message = assert_success(await client.get(f"/messages/{sent}"))["message"]
    assert message["topic_links"] == []
    assert message["content"] == "<p>L0-3 L1-4</p>"
    assert problems(message["content"]) == []
