"""User, group and wildcard mentions, as markdown-it inline rules."""

from __future__ import annotations

import re
from html import escape

from markdown_it.rules_inline import StateInline

from hubbub.markdown.state import ctx_of, push_html, result_of

# What may come right before a mention or a channel link: the start, whitespace, a quote
# or an opening "(", "{", "[", "/" or "<" (Zulip 10.2's BEFORE_MENTION_ALLOWED_REGEX;
# Zulip 8.0 took "," and ":" instead of "{", "[" and "/").
BEFORE_MENTION = r"(?<![^\s'\"\(\{\[/<])"
_USER_MENTION = r"@(?P<silent>_?)\*\*(?P<match>[^\*]+)\*\*"
USER_MENTION_RE = re.compile(BEFORE_MENTION + _USER_MENTION)
# The same without the look-behind: matched at every "@" of a whole message, it finds a
# superset of the mentions the rule resolves (``user_mention_targets``).
_USER_MENTION_ANYWHERE_RE = re.compile(_USER_MENTION)
GROUP_MENTION_RE = re.compile(BEFORE_MENTION + r"@(?P<silent>_?)\*(?P<match>[^\*]+)\*")
MENTION_ID_RE = re.compile(r"(?P<full_name>.+)?\|(?P<user_id>\d+)$")

# The spellings of a channel-wide wildcard ("channel" since feature level 247).
STREAM_WILDCARDS = ("all", "everyone", "stream", "channel")
TOPIC_WILDCARDS = ("topic",)


def user_mention_targets(content: str) -> tuple[set[int], set[str]] | None:
    """The user ids and lower-cased names the user mentions in ``content`` can refer to
    (a superset: in code spans too, and wherever a mention starts inside a longer
    match), for loading only those users; None when a name is not ASCII, which only a
    lookup with Python's ``str.lower`` can match (``queries/render_context.py``)."""
    ids: set[int] = set()
    names: set[str] = set()
    at = content.find("@")
    while at != -1:
        m = _USER_MENTION_ANYWHERE_RE.match(content, at)
        if m is not None:
            name = m.group("match")
            by_id = MENTION_ID_RE.match(name)
            if by_id is not None:
                ids.add(int(by_id.group("user_id")))
            elif name not in STREAM_WILDCARDS and name not in TOPIC_WILDCARDS:
                if not name.isascii():
                    return None
                names.add(name.lower())
        at = content.find("@", at + 1)
    return ids, names


def may_mention_groups(content: str) -> bool:
    """Whether ``content`` can hold a group mention ("@*name*" or "@_*name*")."""
    return "@*" in content or "@_*" in content


def silence_mentions(text: str) -> str:
    """``text`` with its user, group and wildcard mentions made silent, as Zulip does to
    every line of a quote: quoting a message notifies nobody it mentioned again."""
    text = USER_MENTION_RE.sub(lambda m: f"@_**{m.group('match')}**", text)
    return GROUP_MENTION_RE.sub(lambda m: f"@_*{m.group('match')}*", text)


def user_mention(state: StateInline, silent: bool) -> bool:
    if state.src[state.pos] != "@":
        return False
    m = USER_MENTION_RE.match(state.src, state.pos, state.posMax)
    if m is None:
        return False
    ctx, result = ctx_of(state), result_of(state)
    name, is_silent = m.group("match"), m.group("silent") == "_"
    user_id: str | None = None
    css = "user-mention"
    if name in STREAM_WILDCARDS:
        # Zulip 10.2 marks channel wildcards apart from user mentions.
        css, user_id = "user-mention channel-wildcard-mention", "*"
        if not is_silent:
            result.stream_wildcard_mention = name
    elif name in TOPIC_WILDCARDS:
        css = "topic-mention"
        if not is_silent:
            result.topic_wildcard_mention = name
    else:
        id_match = MENTION_ID_RE.match(name)
        if id_match:
            user = ctx.user_by_id(int(id_match.group("user_id")))
            full_name = id_match.group("full_name")
            if full_name and user is not None and user.full_name != full_name:
                user = None
        else:
            user = ctx.user_by_name(name)
        if user is None:
            return False
        if not user.is_active:
            is_silent = True
        if not is_silent:
            result.mentioned_user_ids.add(user.id)
        name, user_id = user.full_name, str(user.id)
    if not silent:
        attrs = f' data-user-id="{user_id}"' if user_id else ""
        text = name if is_silent else f"@{name}"
        css += " silent" if is_silent else ""
        push_html(state, f'<span class="{css}"{attrs}>{escape(text, quote=False)}</span>')
    state.pos = m.end()
    return True


def group_mention(state: StateInline, silent: bool) -> bool:
    if state.src[state.pos] != "@":
        return False
    m = GROUP_MENTION_RE.match(state.src, state.pos, state.posMax)
    if m is None:
        return False
    group = ctx_of(state).group_by_name(m.group("match"))
    if group is None:
        return False
    is_silent = m.group("silent") == "_"
    if not is_silent:
        result_of(state).mentioned_group_ids.add(group.id)
    if not silent:
        css = "user-group-mention silent" if is_silent else "user-group-mention"
        text = group.name if is_silent else f"@{group.name}"
        push_html(
            state,
            f'<span class="{css}" data-user-group-id="{group.id}">'
            f"{escape(text, quote=False)}</span>",
        )
    state.pos = m.end()
    return True
