"""The allow-list every rendered HTML string passes through before it leaves the server.

The renderer escapes at the source; this is the second wall. nh3 (ammonia, an HTML5 parser)
keeps exactly the elements, attributes, classes and URL schemes that Zulip's message markup
uses. nh3 re-serializes what it parses, so when its output differs from the input only in
the spelling of quotes (``&quot;`` against ``"``) and in link and image URLs that it cannot
parse but that pass hubbub's own scheme check, the input is returned as the renderer wrote
it, byte for byte (Zulip's escaping, which clients and the Markdown fixture compare);
otherwise nh3's cleaned version is returned.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import nh3

from hubbub.markdown.links import ALLOWED_SCHEMES
from hubbub.markdown.tex import MATHML_ATTRIBUTES, MATHML_ELEMENTS

_MATHML = {"math", "semantics", "annotation", *MATHML_ELEMENTS}
_HTML_ATTRIBUTES: dict[str, set[str]] = {
    "a": {"href", "title", "class", "data-stream-id", "data-message-id"},
    "blockquote": set(),
    "br": set(),
    "code": set(),
    "del": set(),
    "div": {"class", "aria-hidden", "data-code-language", "title"},
    "em": set(),
    "h1": set(), "h2": set(), "h3": set(), "h4": set(), "h5": set(), "h6": set(),
    "hr": set(),
    "img": {
        "src", "alt", "title", "class", "data-src-fullsize", "data-original-dimensions",
        "data-original-content-type", "data-animated", "data-transcoded-image",
    },
    "li": set(),
    "ol": {"start"},
    "p": set(),
    "pre": set(),
    "span": {
        "class", "title", "aria-hidden", "aria-label", "role", "data-user-id",
        "data-user-group-id",
    },
    "strong": set(),
    "table": set(),
    "tbody": set(),
    "td": {"style"},
    "th": {"style"},
    "thead": set(),
    "time": {"datetime"},
    "tr": set(),
    "ul": set(),
    "video": {"src", "preload", "data-video-original-url"},
}  # fmt: skip
# Classes Zulip's markup gives its elements; emoji and Pygments token classes are matched
# by pattern below.
_CLASSES = {
    "channel-wildcard-mention", "codehilite", "emoji", "katex", "katex-display", "katex-html",
    "katex-mathml", "message-link", "message_body_gravatar", "message_inline_image",
    "message_inline_video", "silent", "spoiler-block", "spoiler-content", "spoiler-header",
    "stream", "stream-topic", "tex-error", "timestamp-error", "topic-mention",
    "user-group-mention", "user-mention",
}  # fmt: skip
_EMOJI_CLASS = re.compile(r"emoji-[0-9a-f]{1,6}(?:-[0-9a-f]{1,6})*")
_DATA_URL_ATTRIBUTES = {"data-src-fullsize", "data-video-original-url", "data-transcoded-image"}
_CELL_STYLE = re.compile(r"text-align: (?:left|center|right);")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# What browsers drop from a URL before reading its scheme.
_URL_IGNORED = re.compile(r"[\x00-\x20]")
# A link or media URL where Zulip's markup has one (nowhere else is a URL left alone).
_URL_ATTRIBUTE = re.compile(r'(<(?:a|img|video)\b[^<>]*?)\s(?:href|src)="([^"]*)"')
_QUOTE_SPELLINGS = (("&quot;", '"'), ("&#x27;", "'"), ("&#39;", "'"), ("&#10;", "\n"))


def url_is_safe(url: str) -> bool:
    """Whether a link or image URL is relative or uses a scheme Zulip links."""
    m = _SCHEME.match(_URL_IGNORED.sub("", url))
    return m is None or m.group(1).lower() in ALLOWED_SCHEMES


@lru_cache(maxsize=1)
def _token_classes() -> frozenset[str]:
    """The short class names Pygments gives highlighted tokens (``k``, ``nf``, ``s2``...)."""
    # Imported on first use, as the highlighter itself is (code.py).
    from pygments.token import STANDARD_TYPES  # type: ignore[import-untyped,unused-ignore]

    return frozenset(str(name) for name in STANDARD_TYPES.values() if name)


def _class_allowed(name: str) -> bool:
    return name in _CLASSES or name in _token_classes() or bool(_EMOJI_CLASS.fullmatch(name))


def _filter_attribute(tag: str, attribute: str, value: str) -> str | None:
    if attribute == "class":
        kept = [name for name in value.split() if _class_allowed(name)]
        return " ".join(kept) if kept else None
    if attribute == "style":
        return value if _CELL_STYLE.fullmatch(value) else None
    if attribute in _DATA_URL_ATTRIBUTES:
        return value if url_is_safe(value) else None
    return value


def _options() -> dict[str, Any]:
    attributes = {tag: set(names) for tag, names in _HTML_ATTRIBUTES.items()}
    attributes.update({tag: set(MATHML_ATTRIBUTES) for tag in _MATHML})
    attributes["math"] |= {"xmlns", "display"}
    attributes["annotation"] = {"encoding"}
    return {
        "tags": set(_HTML_ATTRIBUTES) | _MATHML,
        "clean_content_tags": {"script", "style"},
        "attributes": attributes,
        "strip_comments": True,
        "link_rel": None,
        "url_schemes": set(ALLOWED_SCHEMES),
    }


@lru_cache(maxsize=1)
def _cleaner() -> nh3.Cleaner:
    """The complete allow-list, values of class, style and data URLs included. nh3 is
    imported here, on the first render, so that an idle server does not hold it."""
    import nh3

    return nh3.Cleaner(**_options(), attribute_filter=_filter_attribute)


def _comparable(markup: str) -> str:
    """The markup with the differences nh3's re-serialization makes that change nothing:
    quote spellings, and URLs nh3 cannot parse that still pass ``url_is_safe``."""

    def url(m: re.Match[str]) -> str:
        return m.group(1) if url_is_safe(html.unescape(m.group(2))) else m.group(0)

    markup = _URL_ATTRIBUTE.sub(url, markup)
    for spelling, char in _QUOTE_SPELLINGS:
        markup = markup.replace(spelling, char)
    return markup


def sanitize_html(markup: str) -> str:
    """``markup`` with everything outside Zulip's markup removed."""
    if not markup:
        return markup
    cleaned: str = _cleaner().clean(markup)
    if cleaned == markup or _comparable(cleaned) == _comparable(markup):
        return markup
    return cleaned
