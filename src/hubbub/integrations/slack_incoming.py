"""Slack-compatible incoming webhooks: what a tool written for Slack's incoming webhooks
posts (``text``, Block Kit ``blocks``, legacy ``attachments``), with Slack's "mrkdwn"
turned into Zulip Markdown. The topic comes from the URL's ``topic`` parameter."""

from __future__ import annotations

import re
from typing import Any

from hubbub.integrations.base import Integration, WebhookInput, WebhookMessage, link

# <https://example.com|label>, <https://example.com>, <@U123>, <#C123|general>, <!here>
_ANGLE = re.compile(r"<([^<>|]+)(?:\|([^<>]*))?>")
_BOLD = re.compile(r"(?<![\w*])\*(?!\s)([^*\n]+?)(?<!\s)\*(?![\w*])")
_ITALIC = re.compile(r"(?<![\w_])_(?!\s)([^_\n]+?)(?<!\s)_(?![\w_])")
_STRIKE = re.compile(r"(?<![\w~])~(?!\s)([^~\n]+?)(?<!\s)~(?![\w~])")


def _angle(match: re.Match[str]) -> str:
    target, label = match.group(1), match.group(2)
    if target.startswith(("@", "#")):
        return f"**{label or target}**" if label else target
    if target.startswith("!"):
        # <!here>, <!channel>, <!everyone>, <!date^...|label>: shown as text, never as a
        # wildcard mention (which the channel's settings may forbid a bot).
        special = target[1:].split("^")[0]
        return label or f"@{special}"
    return link(label, target) if label else target


def mrkdwn(text: str) -> str:
    """Slack's mrkdwn as Zulip Markdown: *bold*, _italic_, ~strike~ and <links>."""
    text = _BOLD.sub(r"**\1**", text)
    text = _ITALIC.sub(r"*\1*", text)
    text = _STRIKE.sub(r"~~\1~~", text)
    text = _ANGLE.sub(_angle, text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _text_object(obj: Any) -> str:
    if not isinstance(obj, dict):
        return ""
    text = str(obj.get("text") or "")
    return mrkdwn(text) if obj.get("type") == "mrkdwn" else text


def _block(block: Any) -> str:
    kind = block.get("type")
    if kind == "header":
        return f"### {_text_object(block.get('text'))}"
    if kind == "divider":
        return "---"
    if kind == "section":
        parts = [_text_object(block.get("text"))]
        parts += [f"* {_text_object(f)}" for f in block.get("fields") or []]
        return "\n".join(p for p in parts if p)
    if kind == "context":
        return " ".join(_text_object(e) for e in block.get("elements") or [] if e.get("text"))
    if kind == "image":
        return link(block.get("alt_text") or "image", block.get("image_url"))
    return ""


def _attachment(item: Any) -> str:
    parts = []
    if item.get("pretext"):
        parts.append(mrkdwn(item["pretext"]))
    if item.get("title"):
        parts.append(f"**{link(item['title'], item.get('title_link'))}**")
    if item.get("text"):
        parts.append(mrkdwn(item["text"]))
    for field in item.get("fields") or []:
        parts.append(f"* **{field.get('title', '')}:** {mrkdwn(str(field.get('value', '')))}")
    for block in item.get("blocks") or []:
        parts.append(_block(block))
    if not parts and item.get("fallback"):
        parts.append(mrkdwn(item["fallback"]))
    return "\n".join(p for p in parts if p)


def message(data: WebhookInput) -> WebhookMessage:
    payload = data.payload
    parts = []
    blocks = payload.get("blocks") or []
    if blocks:
        parts += [_block(b) for b in blocks]
    elif payload.get("text"):
        parts.append(mrkdwn(str(payload["text"])))
    parts += [_attachment(a) for a in payload.get("attachments") or []]
    return WebhookMessage("", "\n\n".join(p for p in parts if p))


INTEGRATION = Integration(
    name="slack_incoming",
    display_name="Slack-compatible webhook",
    client="SlackIncoming",
    formatters={"": message},
    default_topic="(no topic)",
)
