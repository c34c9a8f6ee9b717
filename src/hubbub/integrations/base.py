"""The framework every integration module is built on.

An integration names itself, says where its event type comes from (a header such as
``X-GitHub-Event``, or a field of the payload), and maps each supported event type to a
formatter: a function from the request's payload to the message to post (a topic and
Markdown content), or None when the event deliberately posts nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hubbub.integrations.errors import MissingHttpEventHeaderError


@dataclass(frozen=True)
class WebhookInput:
    """What a formatter may read: the JSON payload, the request headers (lower-case
    names) and the URL's parameters (an integration's own options, such as ``branches``)."""

    payload: Any
    headers: Mapping[str, str]
    options: Mapping[str, str]
    event: str = ""

    def option(self, name: str, default: str = "") -> str:
        return self.options.get(name, default)

    def flag(self, name: str) -> bool:
        return self.options.get(name, "").lower() in ("true", "1", "yes")


@dataclass(frozen=True)
class WebhookMessage:
    topic: str
    content: str


Formatter = Callable[[WebhookInput], WebhookMessage | None]
EventSource = Callable[[WebhookInput], str]


@dataclass(frozen=True)
class ConfigOption:
    """A setting offered when a URL for the integration is made (``/register``'s
    ``config_options``): the URL parameter, its label and Zulip's validator name."""

    key: str
    label: str
    validator: str = "check_string"


@dataclass(frozen=True)
class Integration:
    name: str
    display_name: str
    # The name in the client label of posted messages: "Zulip<client>Webhook".
    client: str
    formatters: Mapping[str, Formatter]
    # None: the integration has one kind of event and no event filtering.
    event_source: EventSource | None = None
    config_options: tuple[ConfigOption, ...] = ()
    # Some services (Jira) escape the URL's parameters twice.
    unquote_parameters: bool = False
    # The topic when neither the formatter nor the URL gives one.
    default_topic: str = ""

    @property
    def client_name(self) -> str:
        return f"Zulip{self.client}Webhook"

    @property
    def all_event_types(self) -> list[str] | None:
        if self.event_source is None:
            return None
        return sorted(self.formatters)


def header_event(*names: str) -> EventSource:
    """The event type from the first of these headers present; the first one is named in
    the error when none is."""

    def source(data: WebhookInput) -> str:
        for name in names:
            value = data.headers.get(name.lower())
            if value:
                return value
        raise MissingHttpEventHeaderError(names[0])

    return source


# Markdown helpers shared by the integrations.


def link(text: str, url: str | None) -> str:
    """``[text](url)``, or the text alone without a URL; brackets in the text would end
    the link early."""
    label = text.replace("[", "(").replace("]", ")")
    return f"[{label}]({url})" if url else label


def quote(text: str | None) -> str:
    """A quoted block of ``text`` (empty when there is none)."""
    body = (text or "").strip()
    if not body:
        return ""
    return f"\n\n~~~ quote\n{body}\n~~~"


def first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def commit_list(commits: list[tuple[str, str, str]], total: int, limit: int = 20) -> str:
    """Bullet lines of (short id, url, message) for at most ``limit`` commits, and how
    many more there were."""
    lines = [f"* {first_line(message)} ({link(sha, url)})" for sha, url, message in commits[:limit]]
    if total > len(lines):
        lines.append(f"* … and {plural(total - len(lines), 'more commit')}")
    return "\n".join(lines)


def branch_of(ref: str) -> str:
    for prefix in ("refs/heads/", "refs/tags/"):
        if ref.startswith(prefix):
            return ref[len(prefix) :]
    return ref


def wanted_branch(data: WebhookInput, branch: str) -> bool:
    """Whether the ``branches`` option (a comma-separated list; absent: all) names it."""
    allowed = [b.strip() for b in data.option("branches").split(",") if b.strip()]
    return not allowed or branch in allowed


ZERO_SHA = "0" * 40
