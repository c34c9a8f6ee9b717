"""Grafana: the alerting webhook contact point (its ``status`` is the event type:
``firing`` or ``resolved``), and the legacy dashboard alerts (``state``: ``alerting``,
``ok``, ``no_data``, ``paused``, ``pending``)."""

from __future__ import annotations

from hubbub.integrations.alerts import alert_lines, status_mark
from hubbub.integrations.base import Integration, WebhookInput, WebhookMessage, link, quote
from hubbub.integrations.errors import AnomalousWebhookPayloadError

_LEGACY_STATES = ("alerting", "ok", "no_data", "paused", "pending")


def _event_source(data: WebhookInput) -> str:
    payload = data.payload
    if isinstance(payload, dict) and "alerts" in payload:
        return str(payload["status"])
    if isinstance(payload, dict) and "state" in payload:
        return str(payload["state"])
    raise AnomalousWebhookPayloadError()


def alerting(data: WebhookInput) -> WebhookMessage:
    payload = data.payload
    status = payload["status"]
    common = payload.get("commonLabels") or {}
    group = payload.get("groupLabels") or {}
    topic = group.get("alertname") or common.get("alertname") or payload.get("title") or "Grafana"
    count = len(payload["alerts"])
    head = f"{status_mark(status)} **{status.capitalize()}**: {count} alert" + (
        "s" if count != 1 else ""
    )
    lines = alert_lines(payload["alerts"], "alertname", "generatorURL")
    text = head + "\n\n" + "\n".join(lines)
    if payload.get("externalURL"):
        text += f"\n\n{link('Open Grafana', payload['externalURL'])}"
    return WebhookMessage(str(topic), text)


def legacy(data: WebhookInput) -> WebhookMessage:
    payload = data.payload
    state = payload["state"]
    name = payload.get("ruleName") or payload.get("title") or "Grafana alert"
    mark = {"alerting": ":alert:", "ok": ":check:"}.get(state, ":info:")
    text = f"{mark} {link(str(name), payload.get('ruleUrl'))} is **{state}**"
    text += quote(payload.get("message"))
    matches = payload.get("evalMatches") or []
    if matches:
        text += "\n\n" + "\n".join(f"* {m.get('metric')}: {m.get('value')}" for m in matches)
    if payload.get("imageUrl"):
        text += f"\n\n[Graph]({payload['imageUrl']})"
    return WebhookMessage(str(payload.get("title") or name), text)


INTEGRATION = Integration(
    name="grafana",
    display_name="Grafana",
    client="Grafana",
    event_source=_event_source,
    formatters={"firing": alerting, "resolved": alerting, **dict.fromkeys(_LEGACY_STATES, legacy)},
)
