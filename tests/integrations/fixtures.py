"""Reading the payload fixtures, and the headers each service sends with them.

Fixture files are named after their event: ``<event>[__<variant>].json``; for services
that name the event in a header, the header's value is derived from that name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

FIXTURES = Path(__file__).parent / "fixtures"

_EVENT_HEADERS = {
    "github": "X-GitHub-Event",
    "gitea": "X-Gitea-Event",
    "gitlab": "X-Gitlab-Event",
    "sentry": "Sentry-Hook-Resource",
}


def fixture_body(integration: str, name: str) -> bytes:
    return (FIXTURES / integration / f"{name}.json").read_bytes()


def fixture_payload(integration: str, name: str) -> Any:
    return orjson.loads(fixture_body(integration, name))


def fixture_headers(integration: str, name: str) -> dict[str, str]:
    header = _EVENT_HEADERS.get(integration)
    event = name.split("__")[0]
    if header is None or (integration == "sentry" and event == "plugin"):
        return {}
    if integration == "gitlab":
        # push_hook -> "Push Hook"
        event = " ".join(word.capitalize() for word in event.split("_"))
    return {header: event}


def fixture_names(integration: str) -> list[str]:
    return sorted(path.stem for path in (FIXTURES / integration).glob("*.json"))
