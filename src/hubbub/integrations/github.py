"""GitHub: repository webhooks (event type in the ``X-GitHub-Event`` header)."""

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

# Actions that change nothing a reader of the topic needs to hear about.
_QUIET_PULL_REQUEST_ACTIONS = frozenset(
    {
        "labeled",
        "unlabeled",
        "review_request_removed",
        "locked",
        "unlocked",
        "milestoned",
        "demilestoned",
        "auto_merge_enabled",
        "auto_merge_disabled",
        "enqueued",
        "dequeued",
    }
)
_QUIET_ISSUE_ACTIONS = frozenset(
    {
        "labeled",
        "unlabeled",
        "locked",
        "unlocked",
        "milestoned",
        "demilestoned",
        "pinned",
        "unpinned",
        "typed",
        "untyped",
    }
)


def _user(payload: Any) -> str:
    sender = payload["sender"]
    return link(sender["login"], sender.get("html_url"))


def _repo(payload: Any) -> str:
    return str(payload["repository"]["name"])


def _skip_private(data: WebhookInput) -> bool:
    repository = data.payload.get("repository") or {}
    return data.flag("ignore_private_repositories") and bool(repository.get("private"))


def _pr_topic(payload: Any, number: int, title: str) -> str:
    return f"{_repo(payload)} / PR #{number} {title}"


def _issue_topic(payload: Any, number: int, title: str) -> str:
    return f"{_repo(payload)} / Issue #{number} {title}"


def ping(data: WebhookInput) -> WebhookMessage:
    payload = data.payload
    hook = payload.get("hook") or {}
    events = ", ".join(hook.get("events") or []) or "none"
    if "repository" in payload:
        repository = payload["repository"]
        target = link(repository["full_name"], repository.get("html_url"))
        topic = _repo(payload)
    else:
        target = payload.get("organization", {}).get("login", "GitHub")
        topic = target
    return WebhookMessage(topic, f"GitHub now sends events of {target} here (events: {events}).")


def push(data: WebhookInput) -> WebhookMessage | None:
    payload = data.payload
    ref = payload["ref"]
    branch = branch_of(ref)
    is_tag = ref.startswith("refs/tags/")
    if not is_tag and not wanted_branch(data, branch):
        return None
    who = link(payload["pusher"]["name"], (payload.get("sender") or {}).get("html_url"))
    repository = payload["repository"]
    name = repository["name"]
    url = f"{repository['html_url']}/tree/{branch}"
    if is_tag:
        if payload.get("deleted"):
            return WebhookMessage(name, f"{who} deleted the tag {branch}.")
        return WebhookMessage(name, f"{who} pushed the tag {link(branch, url)}.")
    topic = f"{name} / {branch}"
    if payload.get("deleted") or payload.get("after") == ZERO_SHA:
        return WebhookMessage(topic, f"{who} deleted the branch {branch}.")
    commits = payload.get("commits") or []
    listed = [(c["id"][:7], c["url"], c["message"]) for c in commits]
    total = len(commits)
    if payload.get("created") and not commits:
        return WebhookMessage(topic, f"{who} created the branch {link(branch, url)}.")
    verb = "force-pushed" if payload.get("forced") else "pushed"
    what = link(plural(total, "commit"), payload.get("compare"))
    head = f"{who} {verb} {what} to {link(branch, url)}:"
    return WebhookMessage(topic, f"{head}\n\n{commit_list(listed, total)}")


def pull_request(data: WebhookInput) -> WebhookMessage | None:
    payload = data.payload
    action = payload["action"]
    pr = payload["pull_request"]
    number, title = pr["number"], pr["title"]
    topic = _pr_topic(payload, number, title)
    ref = link(f"#{number}", pr["html_url"])
    who = _user(payload)
    if action in _QUIET_PULL_REQUEST_ACTIONS:
        return None
    if action == "opened":
        draft = "a draft of " if pr.get("draft") else ""
        branches = f"`{pr['head']['ref']}` into `{pr['base']['ref']}`"
        text = f"{who} opened {draft}pull request {ref} to merge {branches}:"
        return WebhookMessage(topic, text + (quote(pr.get("body")) or f"\n\n**{title}**"))
    if action == "closed":
        verb = "merged" if pr.get("merged") else "closed without merging"
        return WebhookMessage(topic, f"{who} {verb} pull request {ref}.")
    simple = {
        "reopened": "reopened",
        "edited": "edited",
        "synchronize": "pushed new commits to",
        "ready_for_review": "marked as ready for review",
        "converted_to_draft": "turned back into a draft",
    }
    if action in simple:
        return WebhookMessage(topic, f"{who} {simple[action]} pull request {ref}.")
    if action in ("assigned", "unassigned"):
        assignee = payload["assignee"]["login"]
        verb = "assigned" if action == "assigned" else "unassigned"
        return WebhookMessage(topic, f"{who} {verb} {assignee} on pull request {ref}.")
    if action == "review_requested":
        reviewer = payload.get("requested_reviewer") or payload.get("requested_team") or {}
        name = reviewer.get("login") or reviewer.get("name") or "someone"
        return WebhookMessage(topic, f"{who} asked {name} to review pull request {ref}.")
    raise UnsupportedWebhookEventTypeError(f"pull_request:{action}")


def issues(data: WebhookInput) -> WebhookMessage | None:
    payload = data.payload
    action = payload["action"]
    issue = payload["issue"]
    number, title = issue["number"], issue["title"]
    topic = _issue_topic(payload, number, title)
    ref = link(f"#{number}", issue["html_url"])
    who = _user(payload)
    if action in _QUIET_ISSUE_ACTIONS:
        return None
    if action == "opened":
        return WebhookMessage(
            topic, f"{who} opened issue {ref}:" + (quote(issue.get("body")) or f"\n\n**{title}**")
        )
    if action == "closed":
        reason = " as not planned" if issue.get("state_reason") == "not_planned" else ""
        return WebhookMessage(topic, f"{who} closed issue {ref}{reason}.")
    if action in ("reopened", "edited", "deleted", "transferred"):
        return WebhookMessage(topic, f"{who} {action} issue {ref}.")
    if action in ("assigned", "unassigned"):
        assignee = payload["assignee"]["login"]
        return WebhookMessage(topic, f"{who} {action} {assignee} on issue {ref}.")
    raise UnsupportedWebhookEventTypeError(f"issues:{action}")


def issue_comment(data: WebhookInput) -> WebhookMessage | None:
    payload = data.payload
    action = payload["action"]
    issue, comment = payload["issue"], payload["comment"]
    number, title = issue["number"], issue["title"]
    is_pr = "pull_request" in issue
    topic = (_pr_topic if is_pr else _issue_topic)(payload, number, title)
    kind = "pull request" if is_pr else "issue"
    target = link(f"{kind} #{number}", issue["html_url"])
    who = _user(payload)
    if action == "deleted":
        return WebhookMessage(topic, f"{who} deleted a comment on {target}.")
    verb = {"created": "commented", "edited": "edited a comment"}.get(action)
    if verb is None:
        raise UnsupportedWebhookEventTypeError(f"issue_comment:{action}")
    remark = link(verb, comment["html_url"])
    return WebhookMessage(topic, f"{who} {remark} on {target}:{quote(comment.get('body'))}")


def release(data: WebhookInput) -> WebhookMessage | None:
    payload = data.payload
    action = payload["action"]
    item = payload["release"]
    tag = item["tag_name"]
    name = item.get("name") or tag
    topic = f"{_repo(payload)} / {tag}"
    who = _user(payload)
    if action in ("created", "edited", "deleted", "unpublished"):
        return WebhookMessage(topic, f"{who} {action} the release {link(name, item['html_url'])}.")
    if action in ("published", "released", "prereleased"):
        kind = "pre-release" if item.get("prerelease") else "release"
        text = f"{who} published the {kind} {link(name, item['html_url'])} (tag `{tag}`)."
        return WebhookMessage(topic, text + quote(item.get("body")))
    raise UnsupportedWebhookEventTypeError(f"release:{action}")


def workflow_run(data: WebhookInput) -> WebhookMessage | None:
    payload = data.payload
    run = payload["workflow_run"]
    if payload["action"] != "completed":
        # Requested and in-progress runs say nothing yet; their completion will.
        return None
    conclusion = run.get("conclusion") or "unknown"
    mark = {"success": ":check:", "failure": ":cross_mark:"}.get(conclusion, ":warning:")
    name = run.get("name") or "Workflow"
    branch = run.get("head_branch") or ""
    title = link(f"{name} #{run['run_number']}", run["html_url"])
    sha = str(run.get("head_sha", ""))[:7]
    text = f"{mark} {title} finished with **{conclusion}** on `{branch}` (commit {sha})."
    return WebhookMessage(f"{_repo(payload)} / {name}", text)


def _guarded(formatter: Any) -> Any:
    def run(data: WebhookInput) -> WebhookMessage | None:
        if _skip_private(data):
            return None
        result: WebhookMessage | None = formatter(data)
        return result

    return run


INTEGRATION = Integration(
    name="github",
    display_name="GitHub",
    client="GitHub",
    event_source=header_event("X-GitHub-Event"),
    formatters={
        name: _guarded(func)
        for name, func in {
            "ping": ping,
            "push": push,
            "pull_request": pull_request,
            "issues": issues,
            "issue_comment": issue_comment,
            "release": release,
            "workflow_run": workflow_run,
        }.items()
    },
    config_options=(
        ConfigOption("branches", "Only these branches (comma-separated)"),
        ConfigOption(
            "ignore_private_repositories", "Skip events of private repositories", "check_bool"
        ),
    ),
)
