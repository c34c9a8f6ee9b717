"""The plain-text preview of a rendered message that a push notification shows."""

from __future__ import annotations

import re
from html.parser import HTMLParser

# Zulip shows at most 200 characters, then a single-character ellipsis.
MAX_PREVIEW_CHARS = 200

_EMOJI_CLASS = re.compile(r"\bemoji-([0-9a-f-]+)\b")


def _emoji_text(codepoints: str) -> str:
    try:
        return "".join(chr(int(part, 16)) for part in codepoints.split("-"))
    except ValueError:
        return ""


class _TextCollector(HTMLParser):
    """Text of the rendered HTML: Unicode emoji for emoji spans, ``alt`` for images,
    quoted lines prefixed with "> " (as Zulip's mobile preview does)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._quotes: list[int] = []  # start index in parts of each open blockquote
        self._skip_depth = 0  # inside an emoji span whose text (":name:") is replaced

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        classes = values.get("class") or ""
        if self._skip_depth:
            self._skip_depth += 1
            return
        if tag == "span" and "emoji" in classes.split():
            match = _EMOJI_CLASS.search(classes)
            if match:
                self.parts.append(_emoji_text(match.group(1)))
                self._skip_depth = 1
                return
        if tag == "img":
            self.parts.append(values.get("alt") or "")
        elif tag == "blockquote":
            self._quotes.append(len(self.parts))

    def handle_endtag(self, tag: str) -> None:
        if self._skip_depth:
            self._skip_depth -= 1
            return
        if tag == "blockquote" and self._quotes:
            start = self._quotes.pop()
            quoted = "".join(self.parts[start:])
            del self.parts[start:]
            self.parts.append("".join(f"> {line}\n" for line in quoted.splitlines() if line))

    def handle_data(self, data: str) -> None:
        if not self._skip_depth:
            self.parts.append(data)


def mobile_push_content(rendered: str) -> str:
    collector = _TextCollector()
    collector.feed(rendered)
    collector.close()
    return "".join(collector.parts)


def truncate_content(content: str) -> tuple[str, bool]:
    if len(content) <= MAX_PREVIEW_CHARS:
        return content, False
    return content[:MAX_PREVIEW_CHARS] + "…", True
