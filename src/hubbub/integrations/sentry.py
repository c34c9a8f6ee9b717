"""Sentry: an internal integration's webhooks (the resource in the ``Sentry-Hook-Resource``
header: ``event_alert``, ``issue``, ``error``, ``installation``), and the older
per-project webhook plugin, which sends no such header."""

from __future__ import annotations

from typing import Any

from hubbub.integrations.base import Integration, WebhookInput, WebhookMessage, link
from hubbub.integrations.errors import UnsupportedWebhookEventTypeError

LEGACY_EVENT = "plugin"


def _event_source(data: WebhookInput) -> str:
    return data.headers.get("sentry-hook-resource") or LEGACY_EVENT


def _level(level: Any) -> str:
    mark = {"fatal": ":skull:", "error": ":cross_mark:", "warning": ":warning:"}.get(
        str(level), ":info:"
    )
    return f"{mark} **{level}**"


def _event_text(event: Any, url: str | None, rule: str | None = None) -> str:
    title = event.get("title") or event.get("message") or "Untitled event"
    lines = [f"{_level(event.get('level', 'error'))} {link(title, url)}"]
    culprit = event.get("culprit") or event.get("location")
    if culprit:
        lines.append(f"* **Where:** `{culprit}`")
    if event.get("environment"):
        lines.append(f"* **Environment:** {event['environment']}")
    if event.get("release"):
        lines.append(f"* **Release:** {event['release']}")
    if rule:
        lines.append(f"* **Alert rule:** {rule}")
    return "\n".join(lines)


def event_alert(data: WebhookInput) -> WebhookMessage:
    body = data.payload["data"]
    event = body["event"]
    title = event.get("title") or "Sentry alert"
    return WebhookMessage(
        title, _event_text(event, event.get("web_url"), body.get("triggered_rule"))
    )


def error(data: WebhookInput) -> WebhookMessage:
    item = data.payload["data"]["error"]
    title = item.get("title") or "Sentry error"
    return WebhookMessage(title, _event_text(item, item.get("web_url")))


_ISSUE_VERBS = {
    "created": "New issue",
    "resolved": "Resolved",
    "assigned": "Assigned",
    "ignored": "Ignored",
    "archived": "Archived",
    "unresolved": "Unresolved again",
}


def issue(data: WebhookInput) -> WebhookMessage:
    payload = data.payload
    action = payload["action"]
    item = payload["data"]["issue"]
    title = item["title"]
    url = item.get("web_url") or item.get("permalink")
    verb = _ISSUE_VERBS.get(action)
    if verb is None:
        raise UnsupportedWebhookEventTypeError(f"issue:{action}")
    text = f"**{verb}:** {link(item.get('shortId') or title, url)}"
    if action == "created":
        text += f"\n* **Level:** {item.get('level', 'error')}"
        if item.get("culprit"):
            text += f"\n* **Where:** `{item['culprit']}`"
    elif action == "assigned":
        assignee = (item.get("assignedTo") or {}).get("name") or "someone"
        text += f" to {assignee}"
    actor = (payload.get("actor") or {}).get("name")
    if actor and action != "created":
        text += f" (by {actor})"
    return WebhookMessage(title, text)


def installation(data: WebhookInput) -> WebhookMessage:
    payload = data.payload
    action = payload["action"]
    org = (payload["data"]["installation"].get("organization") or {}).get("slug", "Sentry")
    actor = (payload.get("actor") or {}).get("name") or "Someone"
    verb = "connected" if action == "created" else "disconnected"
    return WebhookMessage("Sentry", f"{actor} {verb} the Sentry organization **{org}**.")


def plugin(data: WebhookInput) -> WebhookMessage:
    payload = data.payload
    event = dict(payload.get("event") or {})
    event.setdefault("level", payload.get("level", "error"))
    event.setdefault("culprit", payload.get("culprit"))
    title = event.get("title") or payload["message"]
    event["title"] = title
    text = _event_text(event, payload.get("url"))
    project = payload.get("project_name") or payload.get("project")
    if project:
        text += f"\n* **Project:** {project}"
    return WebhookMessage(title, text)


INTEGRATION = Integration(
    name="sentry",
    display_name="Sentry",
    client="Sentry",
    event_source=_event_source,
    formatters={
        "event_alert": event_alert,
        "error": error,
        "issue": issue,
        "installation": installation,
        LEGACY_EVENT: plugin,
    },
)
