"""GitLab: project webhooks (event type in the ``X-Gitlab-Event`` header)."""

from __future__ import annotations

from typing import Any

from hubbub.integrations.base import (
    ZERO_SHA,
    ConfigOption,
    Integration,
    WebhookInput,
    WebhookMessage,
    branch_of,
    commit_list,
    header_event,
    link,
    plural,
    quote,
    wanted_branch,
)
from hubbub.integrations.errors import UnsupportedWebhookEventTypeError


def _project(payload: Any) -> str:
    return str(payload["project"]["path_with_namespace"])


def _who(payload: Any) -> str:
    user = payload.get("user") or {}
    return str(user.get("name") or payload.get("user_name") or "Someone")


def push(data: WebhookInput) -> WebhookMessage | None:
    payload = data.payload
    branch = branch_of(payload["ref"])
    if not wanted_branch(data, branch):
        return None
    project = payload["project"]
    topic = f"{_project(payload)} / {branch}"
    who = payload.get("user_name") or "Someone"
    url = f"{project['web_url']}/-/tree/{branch}"
    if payload.get("after") == ZERO_SHA:
        return WebhookMessage(topic, f"{who} deleted the branch {branch}.")
    commits = payload.get("commits") or []
    total = int(payload.get("total_commits_count", len(commits)))
    if payload.get("before") == ZERO_SHA and not commits:
        return WebhookMessage(topic, f"{who} created the branch {link(branch, url)}.")
    listed = [(c["id"][:7], c["url"], c["message"]) for c in commits]
    head = f"{who} pushed {plural(total, 'commit')} to {link(branch, url)}:"
    return WebhookMessage(topic, f"{head}\n\n{commit_list(listed, total)}")


def tag_push(data: WebhookInput) -> WebhookMessage:
    payload = data.payload
    tag = branch_of(payload["ref"])
    who = payload.get("user_name") or "Someone"
    if payload.get("after") == ZERO_SHA:
        return WebhookMessage(_project(payload), f"{who} deleted the tag {tag}.")
    url = f"{payload['project']['web_url']}/-/tags/{tag}"
    return WebhookMessage(_project(payload), f"{who} pushed the tag {link(tag, url)}.")


_MR_VERBS = {
    "open": "opened",
    "reopen": "reopened",
    "close": "closed",
    "merge": "merged",
    "update": "updated",
    "approved": "approved",
    "unapproved": "withdrew approval of",
    "approval": "approved",
    "unapproval": "withdrew approval of",
}


def merge_request(data: WebhookInput) -> WebhookMessage:
    payload = data.payload
    attrs = payload["object_attributes"]
    iid, title = attrs["iid"], attrs["title"]
    topic = f"{_project(payload)} / MR #{iid} {title}"
    action = attrs.get("action") or "open"
    verb = _MR_VERBS.get(action)
    if verb is None:
        raise UnsupportedWebhookEventTypeError(f"Merge Request Hook {action}")
    ref = link(f"!{iid}", attrs["url"])
    text = f"{_who(payload)} {verb} merge request {ref}"
    if action == "open":
        branches = f"`{attrs['source_branch']}` into `{attrs['target_branch']}`"
        return WebhookMessage(
            topic,
            f"{text} to merge {branches}:"
            + (quote(attrs.get("description")) or f"\n\n**{title}**"),
        )
    return WebhookMessage(topic, text + ".")


_ISSUE_VERBS = {"open": "opened", "reopen": "reopened", "close": "closed", "update": "updated"}


def issue(data: WebhookInput) -> WebhookMessage:
    payload = data.payload
    attrs = payload["object_attributes"]
    iid, title = attrs["iid"], attrs["title"]
    topic = f"{_project(payload)} / Issue #{iid} {title}"
    action = attrs.get("action") or "open"
    verb = _ISSUE_VERBS.get(action)
    if verb is None:
        raise UnsupportedWebhookEventTypeError(f"Issue Hook {action}")
    text = f"{_who(payload)} {verb} issue {link(f'#{iid}', attrs['url'])}"
    if action == "open":
        return WebhookMessage(
            topic, text + ":" + (quote(attrs.get("description")) or f"\n\n**{title}**")
        )
    return WebhookMessage(topic, text + ".")


def note(data: WebhookInput) -> WebhookMessage:
    payload = data.payload
    attrs = payload["object_attributes"]
    kind = attrs["noteable_type"]
    project = _project(payload)
    if kind == "MergeRequest":
        mr = payload["merge_request"]
        topic = f"{project} / MR #{mr['iid']} {mr['title']}"
        target = link(f"merge request !{mr['iid']}", mr["url"])
    elif kind == "Issue":
        item = payload["issue"]
        topic = f"{project} / Issue #{item['iid']} {item['title']}"
        target = link(f"issue #{item['iid']}", item["url"])
    elif kind == "Commit":
        commit = payload["commit"]
        topic = f"{project}"
        target = link(f"commit {commit['id'][:7]}", commit["url"])
    elif kind == "Snippet":
        snippet = payload["snippet"]
        topic = f"{project} / Snippet #{snippet['id']} {snippet['title']}"
        target = f"snippet #{snippet['id']}"
    else:
        raise UnsupportedWebhookEventTypeError(f"Note Hook {kind}")
    remark = link("commented", attrs["url"])
    return WebhookMessage(topic, f"{_who(payload)} {remark} on {target}:{quote(attrs.get('note'))}")


def pipeline(data: WebhookInput) -> WebhookMessage | None:
    payload = data.payload
    attrs = payload["object_attributes"]
    status = attrs["status"]
    if status in ("created", "waiting_for_resource", "preparing", "pending", "scheduled"):
        # Not started yet: its outcome will be reported.
        return None
    project = payload["project"]
    ref = attrs["ref"]
    url = attrs.get("url") or f"{project['web_url']}/-/pipelines/{attrs['id']}"
    mark = {"success": ":check:", "failed": ":cross_mark:", "running": ":gear:"}.get(
        status, ":warning:"
    )
    title = link(f"Pipeline #{attrs['id']}", url)
    text = f"{mark} {title} for `{ref}` is **{status}**"
    duration = attrs.get("duration")
    text += f" after {duration} s." if duration else "."
    builds = payload.get("builds") or []
    if builds:
        lines = [f"* {b['stage']} / {b['name']}: {b['status']}" for b in builds]
        text += "\n\n" + "\n".join(lines)
    return WebhookMessage(f"{_project(payload)} / {ref}", text)


INTEGRATION = Integration(
    name="gitlab",
    display_name="GitLab",
    client="GitLab",
    event_source=header_event("X-Gitlab-Event"),
    formatters={
        "Push Hook": push,
        "Tag Push Hook": tag_push,
        "Merge Request Hook": merge_request,
        "Issue Hook": issue,
        "Confidential Issue Hook": issue,
        "Note Hook": note,
        "Confidential Note Hook": note,
        "Pipeline Hook": pipeline,
    },
    config_options=(ConfigOption("branches", "Only these branches (comma-separated)"),),
)
