"""Realm linkifiers: RE2 patterns whose matches link to an RFC 6570 URL template."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import MutableMapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import re2
from uritemplate import URITemplate

from hubbub.markdown.context import Linkifier, RenderContext
from hubbub.markdown.links import web_link_re
from hubbub.markdown.sanitize import url_is_safe

_OUTER = "linkifier_actual_match"
_AFTER = "linkifier_after_match"
_BEFORE_CHARS = "'\"(,:<"
_TOPIC_SPLITTER = re.compile(r"[ !;\),\'\"]")


@dataclass(frozen=True)
class CompiledLinkifier:
    pattern: Any  # re2 pattern anchored by the caller's position
    search_pattern: Any  # re2 pattern with the "start after whitespace" guard
    template: URITemplate


def may_start_after(char: str) -> bool:
    """Linkifiers (like mentions and links) start after whitespace or opening punctuation."""
    return (
        char.isspace()
        or char == "\x85"
        or unicodedata.category(char).startswith("Z")
        or char in _BEFORE_CHARS
    )


@lru_cache(maxsize=256)
def _compile(pattern: str, url_template: str) -> CompiledLinkifier | None:
    options = re2.Options()
    options.log_errors = False
    try:
        anchored = re2.compile(
            rf"(?P<{_OUTER}>{pattern})(?P<{_AFTER}>$|[^\pL\pN])", options=options
        )
        searching = re2.compile(
            rf"(?:^|\s|\x{{85}}|\pZ|['\"\(,:<])(?P<{_OUTER}>{pattern})(?P<{_AFTER}>$|[^\pL\pN])",
            options=options,
        )
        template = URITemplate(url_template)
    except Exception:  # an invalid pattern or template never links anything
        return None
    return CompiledLinkifier(anchored, searching, template)


def compiled(linkifier: Linkifier) -> CompiledLinkifier | None:
    return _compile(linkifier.pattern, linkifier.url_template)


def expand(linkifier: CompiledLinkifier, groups: dict[str, Any]) -> str:
    variables = {
        name: value
        for name, value in groups.items()
        if value is not None and name not in (_OUTER, _AFTER)
    }
    return str(linkifier.template.expand(variables))


@dataclass(frozen=True)
class EncodedSource:
    """An inline source as UTF-8, with the byte offset of every character when it is not
    ASCII. The RE2 binding encodes a ``str`` argument on every call, so matching at each
    position of a long text would be quadratic; bytes are matched as they are."""

    text: str
    data: bytes
    offsets: list[int] | None

    def byte_offset(self, index: int) -> int:
        return index if self.offsets is None else self.offsets[index]


def encoded_source(env: MutableMapping[str, Any], text: str) -> EncodedSource:
    cached: EncodedSource | None = env.get("linkifier_source")
    if cached is not None and cached.text is text:
        return cached
    data = text.encode("utf-8", "surrogatepass")
    offsets = None
    if len(data) != len(text):
        offsets = [0]
        for char in text:
            offsets.append(offsets[-1] + len(char.encode("utf-8", "surrogatepass")))
    source = EncodedSource(text, data, offsets)
    env["linkifier_source"] = source
    return source


def match_at(
    linkifier: CompiledLinkifier, source: EncodedSource, start: int, end: int
) -> tuple[str, str] | None:
    """(matched text, URL) when the linkifier matches at ``start`` (before ``end``)."""
    begin = source.byte_offset(start)
    if end >= len(source.text):
        m = linkifier.pattern.match(source.data, begin)
    else:
        m = linkifier.pattern.match(source.data[begin : source.byte_offset(end)])
    if m is None:
        return None
    groups = {
        name: value.decode("utf-8", "surrogatepass") if value is not None else None
        for name, value in m.groupdict().items()
    }
    return groups[_OUTER] or "", expand(linkifier, groups)


@dataclass
class _TopicMatch:
    url: str
    text: str
    index: int
    precedence: int | None


def topic_links(topic: str, ctx: RenderContext) -> list[dict[str, str]]:
    """Linkifier matches and bare URLs in a topic name, as ``[{"text", "url"}]``."""
    matches: list[_TopicMatch] = []
    for precedence, linkifier in enumerate(ctx.linkifiers):
        c = compiled(linkifier)
        if c is None:
            continue
        outer = c.search_pattern.groupindex[_OUTER]
        pos = 0
        while pos < len(topic):
            m = c.search_pattern.search(topic, pos)
            if m is None:
                break
            text = m.group(_OUTER)
            matches.append(_TopicMatch(expand(c, m.groupdict()), text, m.start(outer), precedence))
            pos = max(m.end() - len(m.group(_AFTER) or ""), pos + 1)
    matches.sort(key=lambda k: (k.precedence or 0, k.index))

    pos = 0
    while pos < len(topic):
        split = _TOPIC_SPLITTER.search(topic, pos)
        end = split.start() if split is not None else len(topic)
        found = web_link_re().search(topic[pos:end])
        if found:
            raw = found.group("url")
            try:
                parts = urlsplit(raw)
            except ValueError:
                pos = end + 1
                continue
            if not parts.scheme:
                if not parts.netloc:
                    i = (parts.path + "/").index("/")
                    parts = parts._replace(netloc=parts.path[:i], path=parts.path[i:])
                url = parts._replace(scheme="https").geturl()
            else:
                url = raw
            matches.append(_TopicMatch(url, raw, pos, None))
        pos = end + 1

    applied: list[_TopicMatch] = []
    for current in matches:
        if all(
            not (
                other.index <= current.index < other.index + len(other.text)
                or current.index <= other.index < current.index + len(current.text)
            )
            for other in applied
        ):
            applied.append(current)
    applied.sort(key=lambda k: k.index)
    # A linkifier stored before templates were checked may still expand to a script URL.
    return [{"url": m.url, "text": m.text} for m in applied if url_is_safe(m.url)]
