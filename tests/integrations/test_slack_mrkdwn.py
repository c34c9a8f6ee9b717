"""Slack's mrkdwn as Zulip Markdown (the Slack-compatible incoming webhook)."""

from __future__ import annotations

import pytest

from hubbub.integrations.slack_incoming import mrkdwn


@pytest.mark.parametrize(
    ("slack", "markdown"),
    [
        ("*bold* and _italic_ and ~gone~", "**bold** and *italic* and ~~gone~~"),
        ("<https://example.com|the site>", "[the site](https://example.com)"),
        ("<https://example.com>", "https://example.com"),
        ("<!here> deploy done", "@here deploy done"),
        ("<!date^1392734382^{date}|Feb 18, 2014>", "Feb 18, 2014"),
        ("<@U024BE7LH> and <#C024BE7LR|general>", "@U024BE7LH and **general**"),
        ("a * b * c and snake_case_name", "a * b * c and snake_case_name"),
        ("1 &lt; 2 &amp;&amp; 3 &gt; 2", "1 < 2 && 3 > 2"),
        ("<https://x.example/[a]|[label]>", "[(label)](https://x.example/[a])"),
    ],
)
def test_mrkdwn(slack: str, markdown: str) -> None:
    assert mrkdwn(slack) == markdown
