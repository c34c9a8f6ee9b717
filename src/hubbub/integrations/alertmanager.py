"""Prometheus Alertmanager: the webhook receiver (``status`` is the event type: ``firing``
or ``resolved``). The URL's ``name`` parameter picks the label that names each alert
(default ``instance``) and ``desc`` the label that names the topic (default
``alertname``)."""

from __future__ import annotations

from hubbub.integrations.alerts import alert_lines, status_mark
from hubbub.integrations.base import Integration, WebhookInput, WebhookMessage, link


def _event_source(data: WebhookInput) -> str:
    return str(data.payload["status"])


def alerts(data: WebhookInput) -> WebhookMessage:
    payload = data.payload
    name_label = data.option("name", "instance")
    topic_label = data.option("desc", "alertname")
    status = payload["status"]
    items = payload["alerts"]
    first = (items[0].get("labels") or {}) if items else {}
    common = payload.get("commonLabels") or {}
    topic = common.get(topic_label) or first.get(topic_label) or "Alertmanager"
    count = len(items)
    head = f"{status_mark(status)} **{status.capitalize()}**: {count} alert" + (
        "s" if count != 1 else ""
    )
    text = head + "\n\n" + "\n".join(alert_lines(items, name_label, "generatorURL"))
    if payload.get("externalURL"):
        text += f"\n\n{link('Open Alertmanager', payload['externalURL'])}"
    return WebhookMessage(str(topic), text)


INTEGRATION = Integration(
    name="alertmanager",
    display_name="Prometheus Alertmanager",
    client="Alertmanager",
    event_source=_event_source,
    formatters={"firing": alerts, "resolved": alerts},
)
