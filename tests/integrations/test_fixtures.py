"""Every payload fixture, posted to its integration's URL by an incoming-webhook bot: the
message lands in the channel named by ``stream``, with the integration's topic and
content, sent by the bot with the integration's client name."""

from __future__ import annotations

import pytest

from hubbub.integrations import all_integrations
from tests.helpers import assert_success
from tests.integrations.conftest import Hook
from tests.integrations.expected import EXPECTED
from tests.integrations.fixtures import FIXTURES, fixture_body, fixture_headers, fixture_names


def test_every_fixture_has_an_expectation() -> None:
    listed = {(integration, name) for integration, name, _topic, _content in EXPECTED}
    on_disk = {
        (integration, name)
        for integration in all_integrations()
        for name in fixture_names(integration)
    }
    assert listed == on_disk
    # Each integration has fixtures of its own.
    assert {path.name for path in FIXTURES.iterdir() if path.is_dir()} == set(all_integrations())


@pytest.mark.parametrize(
    ("integration", "fixture", "topic", "content"),
    EXPECTED,
    ids=[f"{integration}/{name}" for integration, name, _t, _c in EXPECTED],
)
async def test_fixture_posts_its_message(
    hook: Hook, integration: str, fixture: str, topic: str, content: str
) -> None:
    response = await hook.post(
        integration,
        fixture_body(integration, fixture),
        headers=fixture_headers(integration, fixture),
        params={"stream": "dev"},
    )
    assert_success(response)
    message = await hook.latest()
    assert message["type"] == "stream"
    assert message["display_recipient"] == "dev"
    assert message["stream_id"] == hook.stream.id
    assert message["subject"] == topic
    assert message["content"] == content
    assert message["sender_id"] == hook.bot.id
    assert message["client"] == all_integrations()[integration].client_name
