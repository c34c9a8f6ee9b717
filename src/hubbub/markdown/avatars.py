"""``!avatar(email)`` and ``!gravatar(email)``: a user's avatar, inline in the message.

Zulip renders both alike, as a small image served by ``/avatar/<user>`` (``api/avatar.py``
redirects it to the avatar itself), at 30 pixels:

    <img alt="hamlet@example.com" class="message_body_gravatar"
         src="/avatar/15?s=30" title="hamlet@example.com">

The address is stripped and lowercased; when it is a user's (API) email the URL names
the user by id, otherwise by the address itself. Unlike Zulip, which writes the address
into the URL as typed, characters that are not safe in a URL path are percent-encoded, so
that an address with "?", "#" or "/" in it still names one path.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import quote

from markdown_it.rules_inline import StateInline

from hubbub.markdown.state import ctx_of, push_html

AVATAR_RE = re.compile(r"!avatar\((?P<email>[^)]*)\)")
GRAVATAR_RE = re.compile(r"!gravatar\((?P<email>[^)]*)\)")
# What Zulip's image asks of the avatar server: 30 pixels square.
SIZE_QUERY = "s=30"


def possible_avatar_emails(content: str) -> set[str]:
    """The addresses a message's avatar syntax names, for loading their users."""
    return {
        m.group("email").strip().lower()
        for pattern in (AVATAR_RE, GRAVATAR_RE)
        for m in pattern.finditer(content)
        if m.group("email").strip()
    }


def _attribute(text: str) -> str:
    # As Zulip's serializer writes attribute values.
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("\n", "&#10;")
    )


def avatar_html(email: str, user_id: int | None) -> str:
    """The image for ``email`` (already stripped and lowercased)."""
    target = str(user_id) if user_id is not None else quote(email, safe="@+")
    shown = _attribute(email)
    return (
        f'<img alt="{shown}" class="message_body_gravatar" '
        f'src="/avatar/{_attribute(target)}?{SIZE_QUERY}" title="{shown}">'
    )


def _user_id(state: StateInline, email: str) -> int | None:
    """The id of the user whose API email this is, among the render context's users."""
    by_email: dict[str, int] | None = state.env.get("avatar_user_ids")
    if by_email is None:
        by_email = {u.email.strip().lower(): u.id for u in ctx_of(state).users if u.email}
        state.env["avatar_user_ids"] = by_email
    return by_email.get(email)


def _rule(pattern: re.Pattern[str], marker: str) -> Callable[[StateInline, bool], bool]:
    def rule(state: StateInline, silent: bool) -> bool:
        if not state.src.startswith(marker, state.pos):
            return False
        m = pattern.match(state.src, state.pos, state.posMax)
        if m is None:
            return False
        if not silent:
            email = m.group("email").strip().lower()
            push_html(state, avatar_html(email, _user_id(state, email)))
        state.pos = m.end()
        return True

    return rule


avatar = _rule(AVATAR_RE, "!avatar(")
gravatar = _rule(GRAVATAR_RE, "!gravatar(")
