"""Line-level preprocessing before markdown-it parses the blocks.

Zulip handles fenced blocks before any other block syntax, line by line: code and math
fences become opaque stashed HTML, ``quote`` fences become ``> `` lines, ``spoiler`` fences
become stashed wrapper HTML around Markdown content, and fences nest inside quotes and
spoilers. Lists may hang off a paragraph without a blank line and nest by two spaces. This
module reproduces those rules on the source text so that markdown-it (CommonMark) then
builds the same block structure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hubbub.markdown.code import render_code_block
from hubbub.markdown.tex import TexBudget, render_tex, tex_error_html

FENCE_RE = re.compile(
    r"^(?P<fence>~{3,}|`{3,})[ ]*"
    r"(?:\{?\.?(?P<lang>[a-zA-Z0-9_+\-./#]+)[ ]*(?P<header>[^ ~`][^~`]*)?\}?)?$"
)
LIST_ITEM_RE = re.compile(r"^( *)([*+-]|\d+[.)])( +|$)(.*)$")

SPOILER_OPEN = '<div class="spoiler-block"><div class="spoiler-header">'
SPOILER_MIDDLE = '</div><div class="spoiler-content" aria-hidden="true">'
SPOILER_CLOSE = "</div></div>"


class Stash:
    """HTML produced before parsing, referred to by placeholders in the text."""

    def __init__(self) -> None:
        self.items: list[str] = []
        # Shared by the math fences and the inline formulas of one message.
        self.tex_budget = TexBudget()

    def store(self, html: str) -> str:
        self.items.append(html)
        return f"\x02stash{len(self.items) - 1}\x03"

    def get(self, index: str) -> str:
        """The stored HTML; an index that was never stored (only possible if the input was
        not prepared) yields nothing rather than an error."""
        number = int(index)
        return self.items[number] if number < len(self.items) else ""


PLACEHOLDER_RE = re.compile(r"\x02stash(\d+)\x03")
# Fences nested deeper than this are text: each quote level prefixes every line inside it,
# so unbounded nesting would make the text grow with the square of its length.
MAX_FENCE_DEPTH = 10


@dataclass
class _Frame:
    kind: str  # "outer", "code", "math", "quote" or "spoiler"
    output: list[str]
    fence: str = ""
    lang: str | None = None
    header: str | None = None
    lines: list[str] = field(default_factory=list)


class _FenceProcessor:
    def __init__(self, stash: Stash) -> None:
        self.stash = stash
        self.output: list[str] = []
        self.stack: list[_Frame] = [_Frame("outer", self.output)]

    def run(self, lines: list[str]) -> list[str]:
        for line in lines:
            frame = self.stack[-1]
            if frame.kind == "outer":
                self._open_or_append(line, frame.output)
            elif line.rstrip() == frame.fence:
                self._close()
            elif frame.kind in ("code", "math"):
                frame.lines.append(line.rstrip())
            else:
                self._open_or_append(line, frame.lines)
        while len(self.stack) > 1:
            self._close()
        return self.output

    def _open_or_append(self, line: str, target: list[str]) -> None:
        m = FENCE_RE.match(line) if len(self.stack) <= MAX_FENCE_DEPTH else None
        if m is None:
            target.append(line)
            return
        lang = m.group("lang").lower() if m.group("lang") else None
        kind = {"quote": "quote", "quoted": "quote", "math": "math", "spoiler": "spoiler"}.get(
            lang or "", "code"
        )
        self.stack.append(_Frame(kind, target, m.group("fence"), lang, m.group("header")))

    def _close(self) -> None:
        frame = self.stack.pop()
        if not frame.lines:
            return
        text = "\n".join(frame.lines)
        if frame.kind == "code":
            text = self.stash.store(render_code_block(text, frame.lang))
        elif frame.kind == "math":
            text = self._math(text)
        elif frame.kind == "quote":
            text = "\n".join("> " + line for line in text.split("\n"))
        else:
            parts = [self.stash.store(SPOILER_OPEN)]
            if frame.header is not None:
                parts.append(frame.header)
            parts += [self.stash.store(SPOILER_MIDDLE), text, self.stash.store(SPOILER_CLOSE)]
            text = "\n\n".join(parts)
        frame.output.append("")
        frame.output.extend(text.split("\n"))
        frame.output.append("")

    def _math(self, text: str) -> str:
        rendered = []
        for paragraph in text.split("\n\n"):
            html = render_tex(paragraph, display=True, budget=self.stash.tex_budget)
            rendered.append(self.stash.store(html or tex_error_html(paragraph, display=True)))
        return "\n\n".join(rendered)


def _is_list_item(line: str) -> re.Match[str] | None:
    return LIST_ITEM_RE.match(line)


def _separate_hanging_lists(lines: list[str]) -> list[str]:
    """A list right after a paragraph (or a list of the other kind) starts a new block."""
    out: list[str] = []
    for i, line in enumerate(lines):
        out.append(line)
        if i + 1 >= len(lines) or not line:
            continue
        this, after = _is_list_item(line), _is_list_item(lines[i + 1])
        if after and (
            not this
            or (len(this.group(2)) == 1 and this.group(2) in "*+-")
            != (len(after.group(2)) == 1 and after.group(2) in "*+-")
        ):
            out.append("")
    return out


@dataclass
class _Item:
    indent: int  # indentation as written (Zulip nests by two spaces)
    column: int  # indentation given to markdown-it
    content: int  # column where the item's content starts for markdown-it
    marker: str


_HR_RE = re.compile(r"^ {0,3}([-*_])(?: *\1){2,} *$")


def _renest_lists(lines: list[str], starts: dict[int, int]) -> list[str]:
    """Rewrite list items so that markdown-it (CommonMark) nests them as Zulip does.

    Zulip nests by two spaces, keeps one list when the bullet character changes, and lets a
    nested ordered list start at any number. Nested ordered items are renumbered to 1 (which
    CommonMark lets interrupt a paragraph); ``starts`` records the written number by line so
    that the ``start`` attribute can be restored after parsing.
    """
    out: list[str] = []
    stack: list[_Item] = []
    previous_blank = False
    in_item_paragraph = False
    for line in lines:
        if not line.strip():
            out.append(line)
            previous_blank = True
            in_item_paragraph = False
            continue
        indent = len(line) - len(line.lstrip(" "))
        m = _is_list_item(line)
        if m and not _HR_RE.match(line) and (stack or indent <= 3):
            while stack and stack[-1].indent > indent:
                stack.pop()
            marker = m.group(2)
            if stack and indent >= stack[-1].indent + 2:
                column = stack[-1].content
            elif stack:
                sibling = stack.pop()
                column = sibling.column
                if marker in "*+-" and sibling.marker in "*+-":
                    marker = sibling.marker
            else:
                column = indent
            if column > 0 and marker[0].isdigit():
                starts[len(out)] = int(marker[:-1])
                marker = "1" + marker[-1]
            spaces = len(m.group(3)) if 0 < len(m.group(3)) <= 4 else 1
            stack.append(_Item(indent, column, column + len(marker) + spaces, marker))
            out.append(" " * column + marker + " " * spaces + m.group(4))
            in_item_paragraph = True
        elif stack and indent > 0:
            owners = [item for item in stack if item.indent < indent]
            owner = owners[-1] if owners else stack[0]
            if in_item_paragraph:
                # A line continuing the item's first paragraph keeps its indentation.
                extra = indent
            else:
                extra = max(0, indent - (owner.content - owner.column + owner.indent))
            out.append(" " * (owner.content + extra) + line.lstrip(" "))
        else:
            if previous_blank or not stack:
                stack = []
            out.append(line)
        previous_blank = False
    return out


def _lazy_quote_lines(lines: list[str]) -> list[str]:
    """A line right after an empty ``>`` line still belongs to the quote."""
    out: list[str] = []
    for i, line in enumerate(lines):
        if (
            i > 0
            and line.strip()
            and not line.lstrip().startswith(">")
            and re.fullmatch(r" {0,3}>[> ]*", out[-1])
        ):
            line = out[-1].rstrip() + " " + line
        out.append(line)
    return out


def _literal_lone_quote_markers(lines: list[str]) -> list[str]:
    """A block made only of ``>`` markers shows its innermost ``>`` as text."""
    out = []
    for i, line in enumerate(lines):
        alone = (i == 0 or not lines[i - 1].strip()) and (
            i + 1 == len(lines) or not lines[i + 1].strip()
        )
        if alone and re.fullmatch(r" {0,3}>[> ]*", line):
            line = line.rstrip()[:-1] + "&gt;"
        out.append(line)
    return out


def preprocess(content: str, stash: Stash, list_starts: dict[int, int]) -> str:
    lines = content.replace("\r\n", "\n").replace("\r", "\n").expandtabs(4).split("\n")
    lines = _FenceProcessor(stash).run(lines)
    lines = _separate_hanging_lists(lines)
    lines = _renest_lists(lines, list_starts)
    lines = _lazy_quote_lines(lines)
    lines = _literal_lone_quote_markers(lines)
    return "\n".join(lines)
