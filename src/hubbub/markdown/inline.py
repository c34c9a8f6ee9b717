"""Zulip's inline syntax as markdown-it inline rules.

Zulip matches inline syntax with line-bound regular expressions rather than CommonMark's
delimiter runs (``**`` never spans lines, ``_`` is plain text, backslash escapes are off).
Each rule here recognises one construct at the current position; the rules are tried in
Zulip's priority order and the contents of emphasis and links are parsed recursively.
"""

from __future__ import annotations

import re
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

from hubbub.markdown import avatars, emoji, linkifiers, links
from hubbub.markdown.channel_links import channel_link
from hubbub.markdown.mentions import group_mention, user_mention
from hubbub.markdown.state import ctx_of, push_html, result_of
from hubbub.markdown.tex import render_tex, tex_error_html
from hubbub.markdown.timestamps import render_timestamp

BACKTICK_RE = re.compile(r"(?<!\\)(`+)(.+?)(?<!`)\1(?!`)")
STRONG_EM_RE = re.compile(r"\*\*\*(?!\s+)([^\*^\n]+)(?<!\s)\*\*\*")
STRONG_RE = re.compile(r"\*\*([^\n]+?)\*\*")
EMPHASIS_RE = re.compile(r"\*(?!\s+)([^\*^\n]+)(?<!\s)\*")
DEL_RE = re.compile(r"(?<!~)~~([^~\n]+?)~~(?!~)")
TEX_RE = re.compile(r"\B(?<!\$)\$\$(?P<body>[^\n_$](?:\\\$|[^$\n])*)\$\$(?!\$)\B")
TIMESTAMP_RE = re.compile(r"<time:(?P<time>[^>]*?)>")
ENTITY_RE = re.compile(r"&[\#a-zA-Z0-9]*;")
LINK_TITLE_RE = re.compile(r"^(.*?)\s+(['\"])(.*)\2\s*$", re.DOTALL)
_WORD_RE = re.compile(r"[A-Za-z0-9]+")
_AUTOLINK_START = re.compile(r"[\w.\-]")
_AUTOLINK_AFTER = re.compile(r"[\s'\"\(,:<]")


def _nested(state: StateInline, start: int, end: int) -> None:
    """Parse src[start:end] as inline content at the current point."""
    old_pos, old_max = state.pos, state.posMax
    state.pos, state.posMax = start, end
    state.md.inline.tokenize(state)
    state.pos, state.posMax = old_pos, old_max


def _tag_rule(pattern: re.Pattern[str], tags: tuple[str, ...], marker: str) -> Any:
    def rule(state: StateInline, silent: bool) -> bool:
        if not state.src.startswith(marker, state.pos):
            return False
        m = pattern.match(state.src, state.pos, state.posMax)
        if m is None:
            return False
        if not silent:
            for tag in tags:
                state.push(f"{tag}_open", tag, 1)
            _nested(state, m.start(1), m.end(1))
            for tag in reversed(tags):
                state.push(f"{tag}_close", tag, -1)
        state.pos = m.end()
        return True

    return rule


def backticks(state: StateInline, silent: bool) -> bool:
    if state.src[state.pos] != "`":
        return False
    m = BACKTICK_RE.match(state.src, state.pos, state.posMax)
    if m is None:
        # A run of backticks without its closing run stays text as a whole.
        run = re.match(r"`+", state.src[state.pos : state.posMax])
        assert run is not None
        if not silent:
            state.pending += run.group(0)
        state.pos += len(run.group(0))
        return True
    if not silent:
        state.push("code_inline", "code", 0).content = m.group(2)
    state.pos = m.end()
    return True


def tex(state: StateInline, silent: bool) -> bool:
    if not state.src.startswith("$$", state.pos):
        return False
    m = TEX_RE.match(state.src, state.pos, state.posMax)
    if m is None:
        return False
    if not silent:
        body = m.group("body")
        html = render_tex(body, display=False, budget=state.env.get("tex_budget"))
        push_html(state, html or tex_error_html(m.group(0), display=False))
    state.pos = m.end()
    return True


def timestamp(state: StateInline, silent: bool) -> bool:
    if not state.src.startswith("<time:", state.pos):
        return False
    close = _next_char(state, ">", state.pos)
    if close == -1 or close >= state.posMax:
        return False
    m = TIMESTAMP_RE.match(state.src, state.pos, close + 1)
    if m is None:
        return False
    if not silent:
        push_html(state, render_timestamp(m.group("time")))
    state.pos = m.end()
    return True


def _record_link(state: StateInline, href: str) -> None:
    result = result_of(state)
    result.links.append(href)
    result.has_link = True
    path = links.upload_path_id(href, ctx_of(state).realm_url)
    if path is not None:
        result.has_attachment = True
        result.attachment_path_ids.append(path)


def _push_link(state: StateInline, href: str, title: str | None = None) -> None:
    token = state.push("link_open", "a", 1)
    token.attrs = {"href": href}
    if title:
        token.attrs["title"] = title
    _record_link(state, href)


def _partners(state: StateInline, opening: str, closing: str) -> dict[int, int]:
    """Where each ``opening`` character's balanced ``closing`` one is, for the whole source,
    computed once per inline source: a per-bracket scan to the end would make a run of
    unclosed brackets quadratic."""
    cache: dict[tuple[str, int], tuple[str, dict[int, int]]] = state.env.setdefault("partners", {})
    key = (opening, id(state.src))
    cached = cache.get(key)
    if cached is not None and cached[0] is state.src:
        return cached[1]
    partners: dict[int, int] = {}
    stack: list[int] = []
    for i, char in enumerate(state.src):
        if char == opening:
            stack.append(i)
        elif char == closing and stack:
            partners[stack.pop()] = i
    cache[key] = (state.src, partners)
    return partners


def _closing(state: StateInline, opening: str, closing: str, start: int) -> int | None:
    """The balanced partner of the ``opening`` character at ``start``, before posMax."""
    end = _partners(state, opening, closing).get(start)
    return end if end is not None and end < state.posMax else None


def _next_char(state: StateInline, char: str, start: int) -> int:
    """``state.src.find(char, start)``, remembered so that a run of failed attempts does not
    rescan the rest of the source each time."""
    cache: dict[tuple[str, int], tuple[str, int, int]] = state.env.setdefault("next_char", {})
    key = (char, id(state.src))
    cached = cache.get(key)
    if cached is not None and cached[0] is state.src:
        _, searched_from, found = cached
        if searched_from <= start and (found == -1 or start <= found):
            return found
    found = state.src.find(char, start)
    cache[key] = (state.src, start, found)
    return found


def link(state: StateInline, silent: bool) -> bool:
    src, start = state.src, state.pos
    if src[start] != "[" or (start > 0 and src[start - 1] == "!"):
        return False
    label_end = _closing(state, "[", "]", start)
    if label_end is None or label_end + 1 >= state.posMax or src[label_end + 1] != "(":
        return False
    dest_end = _closing(state, "(", ")", label_end + 1)
    if dest_end is None:
        return False
    raw = src[label_end + 2 : dest_end].strip()
    title = None
    if raw.startswith("<") and ">" in raw:
        raw = raw[1 : raw.index(">")]
    else:
        titled = LINK_TITLE_RE.match(raw)
        if titled:
            raw, title = titled.group(1), titled.group(3)
    href = links.sanitize_url(raw)
    if href is None:
        return False
    href = links.relative_to_realm(href, ctx_of(state).realm_url)
    if not silent:
        _push_link(state, href, title)
        state.env["link_depth"] = state.env.get("link_depth", 0) + 1
        if src[start + 1 : label_end].strip():
            _nested(state, start + 1, label_end)
        else:
            state.pending += href
        state.env["link_depth"] -= 1
        state.push("link_close", "a", -1)
    state.pos = dest_end + 1
    return True


def autolink(state: StateInline, silent: bool) -> bool:
    if state.env.get("link_depth", 0):
        return False
    # The URL pattern's own first character and look-behind, checked before running it.
    if not _AUTOLINK_START.match(state.src, state.pos) or (
        state.pos > 0 and not _AUTOLINK_AFTER.match(state.src, state.pos - 1)
    ):
        return False
    m = links.web_link_re().match(state.src, state.pos, state.posMax)
    if m is None:
        return False
    url = m.group("url")
    if not silent:
        href = links.relative_to_realm(links.autolink_href(url), ctx_of(state).realm_url)
        _push_link(state, href)
        state.pending += url
        state.push("link_close", "a", -1)
    state.pos = m.end()
    return True


def linkifier(state: StateInline, silent: bool) -> bool:
    ctx = ctx_of(state)
    if not ctx.linkifiers or state.env.get("link_depth", 0):
        return False
    if state.pos > 0 and not linkifiers.may_start_after(state.src[state.pos - 1]):
        return False
    source = linkifiers.encoded_source(state.env, state.src)
    for candidate in ctx.linkifiers:
        compiled = linkifiers.compiled(candidate)
        if compiled is None:
            continue
        found = linkifiers.match_at(compiled, source, state.pos, state.posMax)
        if found is None or not found[0]:
            continue
        matched, url = found
        href = links.sanitize_url(url)
        if href is None:
            continue
        if not silent:
            _push_link(state, links.relative_to_realm(href, ctx.realm_url))
            state.pending += matched
            state.push("link_close", "a", -1)
        state.pos += len(matched)
        return True
    return False


def entity(state: StateInline, silent: bool) -> bool:
    if state.src[state.pos] != "&":
        return False
    m = ENTITY_RE.match(state.src, state.pos, state.posMax)
    if m is None:
        return False
    if not silent:
        push_html(state, m.group(0))
    state.pos = m.end()
    return True


def named_emoji(state: StateInline, silent: bool) -> bool:
    if state.src[state.pos] != ":":
        return False
    m = emoji.EMOJI_NAME_RE.match(state.src, state.pos, state.posMax)
    if m is None:
        return False
    name = m.group(1)
    html = emoji.named_emoji_html(name, ctx_of(state).realm_emoji_by_name(name))
    if html is None:
        return False
    if not silent:
        push_html(state, html)
    state.pos = m.end()
    return True


def emoticon(state: StateInline, silent: bool) -> bool:
    if not ctx_of(state).translate_emoticons or state.src[state.pos] not in ":(<;":
        return False
    m = emoji.EMOTICON_RE.match(state.src, state.pos, state.posMax)
    if m is None:
        return False
    name = emoji.EMOTICONS[m.group(1)]
    code = emoji.code_for_name(name)
    if code is None:
        return False
    if not silent:
        push_html(state, emoji.emoji_span(code, name))
    state.pos = m.end()
    return True


def newline(state: StateInline, silent: bool) -> bool:
    if state.src[state.pos] != "\n":
        return False
    if not silent:
        state.push("softbreak", "br", 0)
    state.pos += 1
    return True


def unicode_emoji(state: StateInline, silent: bool) -> bool:
    if ord(state.src[state.pos]) < 0x80 and state.src[state.pos] not in "#*0123456789":
        return False
    m = emoji.unicode_emoji_re().match(state.src, state.pos, state.posMax)
    if m is None:
        return False
    code = emoji.code_for_unicode(m.group(0))
    if not silent:
        if code is None:
            state.pending += m.group(0)
        else:
            push_html(state, emoji.unicode_emoji_html(code))
    state.pos = m.end()
    return True


def text(state: StateInline, silent: bool) -> bool:
    m = _WORD_RE.match(state.src, state.pos, state.posMax)
    if m is None:
        return False
    if not silent:
        state.pending += m.group(0)
    state.pos = m.end()
    return True


RULES: list[tuple[str, Any]] = [
    ("zulip_backticks", backticks),
    ("zulip_strong_em", _tag_rule(STRONG_EM_RE, ("strong", "em"), "***")),
    ("zulip_user_mention", user_mention),
    ("zulip_tex", tex),
    ("zulip_stream", channel_link),
    ("zulip_avatar", avatars.avatar),
    ("zulip_timestamp", timestamp),
    # Zulip tries the older spelling after timestamps.
    ("zulip_gravatar", avatars.gravatar),
    ("zulip_group_mention", group_mention),
    ("zulip_link", link),
    ("zulip_autolink", autolink),
    ("zulip_linkifier", linkifier),
    ("zulip_entity", entity),
    ("zulip_strong", _tag_rule(STRONG_RE, ("strong",), "**")),
    ("zulip_emphasis", _tag_rule(EMPHASIS_RE, ("em",), "*")),
    ("zulip_del", _tag_rule(DEL_RE, ("del",), "~~")),
    ("zulip_emoji", named_emoji),
    ("zulip_emoticon", emoticon),
    ("zulip_newline", newline),
    ("zulip_unicode_emoji", unicode_emoji),
    ("zulip_text", text),
]


def install(md: MarkdownIt) -> None:
    """Replace markdown-it's inline rules by Zulip's: they are added after markdown-it's
    own, which are then disabled, so that the inline chain holds Zulip's rules alone."""
    for name, rule in RULES:
        md.inline.ruler.push(name, rule)
    md.inline.ruler.enableOnly([name for name, _ in RULES])
