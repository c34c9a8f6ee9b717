"""The client name taken from the User-Agent (``api/user_agent.py``), as Zulip parses it."""

from __future__ import annotations

import pytest

from hubbub.api.user_agent import client_name, parse_user_agent
from tests.helpers import TestEnv, assert_success

FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36"
)

# (User-Agent, name, version)
PARSED = [
    # The official Python client with a client name of its own: name, then the platform.
    ("zulipchat-mcp (Debian GNU/Linux; 12)", "zulipchat-mcp", None),
    ("ZulipMobile/27.1 (Android 13)", "ZulipMobile", "27.1"),
    ("ZulipPython/0.9.0", "ZulipPython", "0.9.0"),
    ("ZulipFlutter/0.0.20 (Android 14)", "ZulipFlutter", "0.0.20"),
    ("ZulipElectron/5.11.1 Electron/31.3.0", "ZulipElectron", "5.11.1"),
    # A name of several words stays whole.
    ("Zulip Terminal/0.7.0 (Linux; 6.1)", "Zulip Terminal", "0.7.0"),
    ("API: Python (Linux; 6.1)", "API: Python", None),
    (FIREFOX, "Mozilla", "5.0"),
    (CHROME, "Mozilla", "5.0"),
    ("curl/8.5.0", "curl", "8.5.0"),
    ("python-requests/2.32.3", "python-requests", "2.32.3"),
    ("HubbubTests/1.0", "HubbubTests", "1.0"),
    ("Bare", "Bare", None),
    ("name/", "name", ""),
    ("a/b/c", "a", "b"),
    ("", "", None),
]


@pytest.mark.parametrize(("agent", "name", "version"), PARSED)
def test_parse_user_agent(agent: str, name: str, version: str | None) -> None:
    parsed = parse_user_agent(agent)
    assert (parsed.name, parsed.version) == (name, version)


# (client parameter, User-Agent, browser view, client name)
NAMED = [
    (None, "zulipchat-mcp (Debian GNU/Linux; 12)", False, "zulipchat-mcp"),
    (None, "ZulipMobile/27.1 (Android 13)", False, "ZulipMobile"),
    # Over the API with Basic auth a browser is what its agent says, "Mozilla"; in the
    # web client Zulip calls it "website", but lets its desktop app be itself.
    (None, FIREFOX, False, "Mozilla"),
    (None, FIREFOX, True, "website"),
    (None, "ZulipElectron/5.11.1 Electron/31.3.0", True, "ZulipElectron"),
    # The parameter wins over the agent.
    ("terminal", "ZulipMobile/27.1", False, "terminal"),
    ("", "ZulipMobile/27.1", False, "ZulipMobile"),
    (None, None, False, "Unspecified"),
    (None, "   ", False, "Unspecified"),
    # Zulip keeps 30 characters.
    ("c" * 40, None, False, "c" * 30),
    (None, "a" * 31 + "/1.0", False, "a" * 30),
]


@pytest.mark.parametrize(("client", "agent", "browser_view", "name"), NAMED)
def test_client_name(client: str | None, agent: str | None, browser_view: bool, name: str) -> None:
    assert client_name(client, agent, browser_view=browser_view) == name


@pytest.mark.parametrize(
    ("headers", "params", "name"),
    [
        ({"User-Agent": "zulipchat-mcp (Debian GNU/Linux; 12)"}, {}, "zulipchat-mcp"),
        ({"User-Agent": "ZulipMobile/27.1 (Android 13)"}, {}, "ZulipMobile"),
        ({"User-Agent": FIREFOX}, {}, "Mozilla"),
        ({"User-Agent": "ZulipPython/0.9.0"}, {"client": "my bot"}, "my bot"),
    ],
)
async def test_message_client(
    env: TestEnv, headers: dict[str, str], params: dict[str, str], name: str
) -> None:
    """A message records the client it was sent from, as ``client``."""
    client = env.client("hamlet", headers=headers)
    sent = assert_success(
        await client.post(
            "/messages",
            {"type": "private", "to": '["othello@example.com"]', "content": "hi", **params},
        )
    )
    body = assert_success(await env.client("hamlet").get(f"/messages/{sent['id']}"))
    assert body["message"]["client"] == name
