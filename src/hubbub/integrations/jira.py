"""Jira: the system webhooks (event type in the payload's ``webhookEvent``:
``jira:issue_created``, ``jira:issue_updated``, ``jira:issue_deleted``,
``comment_created``, ``comment_updated``, ``comment_deleted``)."""

from __future__ import annotations

from typing import Any

from hubbub.integrations.base import Integration, WebhookInput, WebhookMessage, link, quote
from hubbub.integrations.errors import AnomalousWebhookPayloadError

MAX_CHANGES = 10


def _event_source(data: WebhookInput) -> str:
    payload = data.payload
    if not isinstance(payload, dict) or "webhookEvent" not in payload:
        raise AnomalousWebhookPayloadError()
    return str(payload["webhookEvent"])


def _issue_url(issue: Any) -> str | None:
    """The issue's page: its REST URL ends in ``/rest/api/<version>/issue/<id>``."""
    api_url = str(issue.get("self") or "")
    base, found, _rest = api_url.partition("/rest/api/")
    return f"{base}/browse/{issue['key']}" if found else None


def _topic(issue: Any) -> str:
    return f"{issue['key']}: {issue['fields']['summary']}"


def _who(payload: Any, key: str = "user") -> str:
    return str((payload.get(key) or {}).get("displayName") or "Someone")


def _issue_link(issue: Any) -> str:
    return link(issue["key"], _issue_url(issue))


def issue_created(data: WebhookInput) -> WebhookMessage:
    issue = data.payload["issue"]
    fields = issue["fields"]
    kind = (fields.get("issuetype") or {}).get("name", "issue").lower()
    text = f"{_who(data.payload)} created {kind} {_issue_link(issue)} **{fields['summary']}**"
    details = []
    for label, value in (
        ("Priority", (fields.get("priority") or {}).get("name")),
        ("Assignee", (fields.get("assignee") or {}).get("displayName")),
        ("Status", (fields.get("status") or {}).get("name")),
    ):
        if value:
            details.append(f"* **{label}:** {value}")
    if details:
        text += "\n" + "\n".join(details)
    return WebhookMessage(_topic(issue), text + quote(fields.get("description")))


def issue_updated(data: WebhookInput) -> WebhookMessage | None:
    payload = data.payload
    issue = payload["issue"]
    # Older Jira sends comments as issue updates.
    comment = payload.get("comment")
    if comment is not None and payload.get("issue_event_type_name") in (
        "issue_commented",
        "issue_comment_edited",
    ):
        return _comment(
            payload,
            "commented on"
            if payload["issue_event_type_name"] == "issue_commented"
            else "edited a comment on",
        )
    items = (payload.get("changelog") or {}).get("items") or []
    changes = []
    for item in items[:MAX_CHANGES]:
        before, after = item.get("fromString"), item.get("toString")
        field = item.get("field", "field")
        if field in ("description", "Comment"):
            changes.append(f"* changed the {field}")
        elif before and after:
            changes.append(f"* **{field}:** ~~{before}~~ → {after}")
        elif after:
            changes.append(f"* **{field}:** set to {after}")
        else:
            changes.append(f"* **{field}:** cleared (was {before})")
    if not changes:
        return None
    text = f"{_who(payload)} updated {_issue_link(issue)}:\n" + "\n".join(changes)
    return WebhookMessage(_topic(issue), text)


def issue_deleted(data: WebhookInput) -> WebhookMessage:
    issue = data.payload["issue"]
    return WebhookMessage(
        _topic(issue),
        f"{_who(data.payload)} deleted {issue['key']} **{issue['fields']['summary']}**.",
    )


def _comment(payload: Any, verb: str) -> WebhookMessage:
    issue = payload["issue"]
    comment = payload["comment"]
    who = str(
        (comment.get("updateAuthor") or comment.get("author") or {}).get("displayName")
        or _who(payload)
    )
    body = quote(comment.get("body")) if "deleted" not in verb else ""
    text = f"{who} {verb} {_issue_link(issue)}" + (f":{body}" if body else ".")
    return WebhookMessage(_topic(issue), text)


def comment_created(data: WebhookInput) -> WebhookMessage:
    return _comment(data.payload, "commented on")


def comment_updated(data: WebhookInput) -> WebhookMessage:
    return _comment(data.payload, "edited a comment on")


def comment_deleted(data: WebhookInput) -> WebhookMessage:
    return _comment(data.payload, "deleted a comment on")


INTEGRATION = Integration(
    name="jira",
    display_name="Jira",
    client="Jira",
    event_source=_event_source,
    formatters={
        "jira:issue_created": issue_created,
        "jira:issue_updated": issue_updated,
        "jira:issue_deleted": issue_deleted,
        "comment_created": comment_created,
        "comment_updated": comment_updated,
        "comment_deleted": comment_deleted,
    },
    unquote_parameters=True,
)
