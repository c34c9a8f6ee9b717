"""What Grafana's and Alertmanager's webhooks share: a group of alerts, each firing or
resolved, with labels and annotations."""

from __future__ import annotations

from typing import Any

from hubbub.integrations.base import link

MAX_ALERTS = 20


def status_mark(status: str) -> str:
    return {"firing": ":alert:", "resolved": ":check:"}.get(status, ":info:")


def alert_lines(alerts: list[Any], name_label: str, url_key: str) -> list[str]:
    """One bullet per alert: its status, its name (the ``name_label`` label, or its
    summary), a link to its source and its description."""
    lines = []
    for alert in alerts[:MAX_ALERTS]:
        labels = alert.get("labels") or {}
        annotations = alert.get("annotations") or {}
        name = (
            labels.get(name_label)
            or annotations.get("summary")
            or labels.get("alertname")
            or "alert"
        )
        status = alert.get("status", "firing")
        entry = f"* {status_mark(status)} {link(str(name), alert.get(url_key))} ({status})"
        detail = annotations.get("description") or annotations.get("message")
        if detail:
            entry += f": {detail}"
        lines.append(entry)
    if len(alerts) > MAX_ALERTS:
        lines.append(f"* … and {len(alerts) - MAX_ALERTS} more")
    return lines
