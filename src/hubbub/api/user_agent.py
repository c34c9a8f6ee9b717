"""The client name of a request, as Zulip derives it (message ``client``, statistics).

Zulip reads the name from the User-Agent: the text up to the first "/" or the first space
that ends the name, keeping a multi-word name such as "Zulip Terminal" whole, but never
the parenthesised platform that follows ("zulipchat-mcp (Debian GNU/Linux; 12)" is
"zulipchat-mcp"). A ``client`` parameter wins over the User-Agent, a request without a
User-Agent is "Unspecified", and the name is cut to the 30 characters Zulip stores.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

# The name is a run without "/" or space, then anything but a digit, "/" or "(" (so
# "Zulip Terminal" stays one name, while the version and platform are left out); then an
# optional "/version"; then the rest, which starts with a space or a "/".
_USER_AGENT = re.compile(
    r"(?P<name>[^/ ]*[^0-9/(]*)(?:/(?P<version>[^/ ]*))?(?:[ /].*)?",
    re.DOTALL,
)

# Zulip's ``Client.name`` column holds at most this many characters.
MAX_CLIENT_NAME_LENGTH = 30
UNSPECIFIED = "Unspecified"
# What Zulip names every request of its web app, whatever the browser.
WEBSITE = "website"


class UserAgent(NamedTuple):
    name: str
    version: str | None


def parse_user_agent(user_agent: str) -> UserAgent:
    """The client name and version a User-Agent announces."""
    match = _USER_AGENT.fullmatch(user_agent)
    # Every text matches: the name's first run stops at a "/" or a space, or at the end.
    assert match is not None
    return UserAgent(match.group("name"), match.group("version"))


# Every request asks, with one of the few agents its clients send.
@lru_cache(maxsize=1024)
def client_name(client: str | None, user_agent: str | None, *, browser_view: bool = False) -> str:
    """The name a request's client goes by: the ``client`` parameter, else the
    User-Agent's name. ``browser_view``: a request of the web client, which Zulip names
    "website" unless the agent is one of its own apps (the desktop app says "ZulipElectron").
    """
    if client:
        name = client
    elif user_agent is None or not user_agent.strip():
        # Zulip tags requests without a User-Agent so that they can be found in its logs;
        # an empty one is taken as none, rather than as a client without a name.
        name = UNSPECIFIED
    else:
        name = parse_user_agent(user_agent).name
    if browser_view and not name.startswith("Zulip"):
        name = WEBSITE
    return name[:MAX_CLIENT_NAME_LENGTH]
