"""Zulip 8.0's Markdown fixture (tests/reference/markdown_test_cases.json), run in full.

Every case is rendered and compared with Zulip's expected HTML. The test fails when fewer
cases match than the recorded floor; raise FLOOR when rendering improves (never lower it).
Cases known not to match are listed in docs/markdown.md with the reason.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from hubbub.markdown import RenderContext, render_markdown

# Matched cases out of 249 (178 regular + 71 linkify) when this floor was recorded.
FLOOR = 238

# A copy of Zulip 8.0's fixture, kept in the checkout (tests/reference/NOTICE).
FIXTURE = Path(__file__).resolve().parents[1] / "reference" / "markdown_test_cases.json"
# Zulip's test server, whose own links are rewritten to relative ones.
REALM_URL = "http://zulip.testserver"


@lru_cache(maxsize=1)
def _fixture() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text("utf-8"))
    return data


def _context(case: dict[str, Any]) -> RenderContext:
    # The fixture's cases mention no users, groups or streams: Zulip's defaults suffice.
    return RenderContext(
        realm_url=REALM_URL, translate_emoticons=bool(case.get("translate_emoticons", False))
    )


def _linkify_expected(template: str, url: str) -> str:
    """The expectation Zulip's test builds for a linkify case."""
    if not url or "%s" not in template:
        return template
    if url[:4] == "http":
        href = url
    elif "@" in url:
        href = "mailto:" + url
    else:
        href = "http://" + url
    return template % f'<a href="{href}">{url}</a>'


def run_fixture() -> tuple[int, int, list[str]]:
    data = _fixture()
    matched, failing = 0, []
    for case in data["regular_tests"]:
        html = render_markdown(case["input"], _context(case)).html
        if html == case["expected_output"]:
            matched += 1
        else:
            failing.append(case["name"])
    for source, template, url in data["linkify_tests"]:
        html = render_markdown(source, RenderContext(realm_url=REALM_URL)).html
        if html == _linkify_expected(template, url):
            matched += 1
        else:
            failing.append(f"linkify: {source}")
    total = len(data["regular_tests"]) + len(data["linkify_tests"])
    return matched, total, failing


def test_fixture_matches_at_least_the_floor() -> None:
    matched, total, failing = run_fixture()
    print(f"\nmarkdown fixture: {matched}/{total} cases match; failing: {failing}")
    assert matched >= FLOOR, f"{matched}/{total} match, below the floor {FLOOR}: {failing}"


@pytest.mark.parametrize(
    "name",
    ["basic_paragraph", "codeblock_hilite_python", "fenced_nested_quote", "tables", "star_emoji"],
)
def test_core_cases_match(name: str) -> None:
    case = next(c for c in _fixture()["regular_tests"] if c["name"] == name)
    assert render_markdown(case["input"], _context(case)).html == case["expected_output"]
