"""Gitea and Forgejo: repository webhooks of the "Gitea" kind (event type in the
``X-Gitea-Event`` header, which Forgejo sends too beside ``X-Forgejo-Event``)."""

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


def _name(user: Any) -> str:
    return str(user.get("full_name") or user.get("login") or user.get("username") or "Someone")


def _who(payload: Any) -> str:
    sender = payload.get("sender") or payload.get("pusher") or {}
    return link(_name(sender), sender.get("html_url"))


def _repo(payload: Any) -> str:
    return str(payload["repository"]["name"])


def push(data: WebhookInput) -> WebhookMessage | None:
    payload = data.payload
    branch = branch_of(payload["ref"])
    if payload["ref"].startswith("refs/tags/"):
        return WebhookMessage(_repo(payload), f"{_who(payload)} pushed the tag {branch}.")
    if not wanted_branch(data, branch):
        return None
    topic = f"{_repo(payload)} / {branch}"
    url = f"{payload['repository']['html_url']}/src/branch/{branch}"
    if payload.get("after") == ZERO_SHA:
        return WebhookMessage(topic, f"{_who(payload)} deleted the branch {branch}.")
    commits = payload.get("commits") or []
    total = int(payload.get("total_commits") or len(commits))
    listed = [(c["id"][:7], c["url"], c["message"]) for c in commits]
    what = link(plural(total, "commit"), payload.get("compare_url"))
    text = f"{_who(payload)} pushed {what} to {link(branch, url)}:"
    return WebhookMessage(topic, f"{text}\n\n{commit_list(listed, total)}")


def pull_request(data: WebhookInput) -> WebhookMessage | None:
    payload = data.payload
    action = payload["action"]
    pr = payload["pull_request"]
    number, title = pr["number"], pr["title"]
    topic = f"{_repo(payload)} / PR #{number} {title}"
    ref = link(f"#{number}", pr["html_url"])
    who = _who(payload)
    if action == "opened":
        branches = f"`{pr['head']['ref']}` into `{pr['base']['ref']}`"
        text = f"{who} opened pull request {ref} to merge {branches}:"
        return WebhookMessage(topic, text + (quote(pr.get("body")) or f"\n\n**{title}**"))
    if action == "closed":
        verb = "merged" if pr.get("merged") else "closed without merging"
        return WebhookMessage(topic, f"{who} {verb} pull request {ref}.")
    verbs = {
        "reopened": "reopened",
        "edited": "edited",
        "synchronized": "pushed new commits to",
        "assigned": "assigned",
        "unassigned": "unassigned",
    }
    if action in ("label_updated", "label_cleared", "milestoned", "demilestoned"):
        return None
    if action not in verbs:
        raise UnsupportedWebhookEventTypeError(f"pull_request:{action}")
    return WebhookMessage(topic, f"{who} {verbs[action]} pull request {ref}.")


def issues(data: WebhookInput) -> WebhookMessage | None:
    payload = data.payload
    action = payload["action"]
    issue = payload["issue"]
    number, title = issue["number"], issue["title"]
    topic = f"{_repo(payload)} / Issue #{number} {title}"
    ref = link(f"#{number}", issue["html_url"])
    who = _who(payload)
    if action == "opened":
        return WebhookMessage(
            topic, f"{who} opened issue {ref}:" + (quote(issue.get("body")) or f"\n\n**{title}**")
        )
    if action in ("label_updated", "label_cleared", "milestoned", "demilestoned"):
        return None
    if action not in ("closed", "reopened", "edited", "assigned", "unassigned"):
        raise UnsupportedWebhookEventTypeError(f"issues:{action}")
    return WebhookMessage(topic, f"{who} {action} issue {ref}.")


def issue_comment(data: WebhookInput) -> WebhookMessage:
    payload = data.payload
    action = payload["action"]
    issue, comment = payload["issue"], payload["comment"]
    number, title = issue["number"], issue["title"]
    is_pr = bool(payload.get("is_pull")) or bool(issue.get("pull_request"))
    label = "PR" if is_pr else "Issue"
    topic = f"{_repo(payload)} / {label} #{number} {title}"
    kind = "pull request" if is_pr else "issue"
    target = link(f"{kind} #{number}", issue["html_url"])
    verbs = {"created": "commented", "edited": "edited a comment", "deleted": "deleted a comment"}
    if action not in verbs:
        raise UnsupportedWebhookEventTypeError(f"issue_comment:{action}")
    remark = link(verbs[action], comment.get("html_url"))
    body = quote(comment.get("body")) if action != "deleted" else ""
    return WebhookMessage(
        topic, f"{_who(payload)} {remark} on {target}" + (f":{body}" if body else ".")
    )


def release(data: WebhookInput) -> WebhookMessage:
    payload = data.payload
    action = payload["action"]
    item = payload["release"]
    tag = item["tag_name"]
    name = item.get("name") or tag
    verbs = {"published": "published", "updated": "updated", "deleted": "deleted"}
    if action not in verbs:
        raise UnsupportedWebhookEventTypeError(f"release:{action}")
    title = link(name, item.get("html_url"))
    text = f"{_who(payload)} {verbs[action]} the release {title} (tag `{tag}`)."
    if action == "published":
        text += quote(item.get("body"))
    return WebhookMessage(f"{_repo(payload)} / {tag}", text)


INTEGRATION = Integration(
    name="gitea",
    display_name="Gitea",
    client="Gitea",
    event_source=header_event("X-Gitea-Event", "X-Forgejo-Event"),
    formatters={
        "push": push,
        "pull_request": pull_request,
        "issues": issues,
        "issue_comment": issue_comment,
        "release": release,
    },
    config_options=(ConfigOption("branches", "Only these branches (comma-separated)"),),
)
