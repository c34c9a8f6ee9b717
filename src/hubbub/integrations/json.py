"""Any JSON: the payload posted as an indented JSON code block, for services hubbub has
no integration for (and for seeing what a service sends)."""

from __future__ import annotations

import orjson

from hubbub.integrations.base import Integration, WebhookInput, WebhookMessage


def message(data: WebhookInput) -> WebhookMessage:
    text = orjson.dumps(data.payload, option=orjson.OPT_INDENT_2).decode()
    return WebhookMessage("", f"```json\n{text}\n```")


INTEGRATION = Integration(
    name="json",
    display_name="JSON formatter",
    client="JSON",
    formatters={"": message},
    default_topic="JSON",
)
