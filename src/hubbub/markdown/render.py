"""The entry point: Zulip-flavoured Markdown to HTML plus what the message pipeline needs."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import isStrSpace
from markdown_it.renderer import RendererHTML
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from hubbub.markdown import inline
from hubbub.markdown.blocks import PLACEHOLDER_RE, Stash, preprocess
from hubbub.markdown.code import render_code_block
from hubbub.markdown.context import RenderContext, RenderResult
from hubbub.markdown.images import UploadPreview, image_attributes, preview_html
from hubbub.markdown.mentions import silence_mentions
from hubbub.markdown.sanitize import sanitize_html

# Zulip's MAX_MESSAGE_LENGTH: longer content is cut as a send cuts it, so that no caller
# (a preview through POST /messages/render included) renders more than a message holds.
MAX_RENDERED_LENGTH = 10000
TRUNCATED_SUFFIX = "\n[message truncated]"
# The stash's placeholder delimiters; Python-Markdown (Zulip's renderer) also removes them
# from the source, so no user text can name a stashed block.
_MARKER_CHARS = str.maketrans("", "", "\x02\x03")

_ALERT_BEFORE = set(" \n(\".,';[*`>")
_ALERT_AFTER = set(" \n)\"?:.,';]!*`")


def _escape_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _paragraph(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """markdown-it's paragraph, except that trailing whitespace is kept (as Zulip does)."""
    next_line = start_line + 1
    terminators = state.md.block.ruler.getRules("paragraph")
    end_line = state.lineMax
    old_parent = state.parentType
    state.parentType = "paragraph"
    while next_line < end_line:
        if state.isEmpty(next_line):
            break
        if state.sCount[next_line] - state.blkIndent > 3 or state.sCount[next_line] < 0:
            next_line += 1
            continue
        if any(rule(state, next_line, end_line, True) for rule in terminators):
            break
        next_line += 1
    content = state.getLines(start_line, next_line, state.blkIndent, False)
    i = 0
    while i < len(content) and isStrSpace(content[i]):
        i += 1
    state.line = next_line
    state.push("paragraph_open", "p", 1).map = [start_line, state.line]
    token = state.push("inline", "", 0)
    token.content = content[i:]
    token.map = [start_line, state.line]
    token.children = []
    state.push("paragraph_close", "p", -1)
    state.parentType = old_parent
    return True


def _render_text(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    return _escape_text(tokens[idx].content)


def _render_code_inline(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    return f"<code>{_escape_text(tokens[idx].content)}</code>"


def _render_softbreak(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    return "<br>\n"


def _render_code_block(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    text = "\n".join(line.rstrip() for line in tokens[idx].content.split("\n"))
    return render_code_block(text, None) + "\n"


def _render_list_item_open(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    # Tight items put their text right after <li> (and a nested list right after the text).
    following = tokens[idx + 1] if idx + 1 < len(tokens) else None
    if following is not None and following.type == "paragraph_open" and following.hidden:
        return "<li>"
    return "<li>\n"


def _render_list_open(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    # A list nested in a tight item follows the item's text directly: "<li>text<ul>".
    token = tokens[idx]
    return f"<{token.tag}{self.renderAttrs(token)}>\n"


def _render_paragraph_close(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    if tokens[idx].hidden:
        return ""
    return "</p>\n"


def _render_cell_open(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    style = str(token.attrs.get("style", ""))
    if style.startswith("text-align:"):
        return f'<{token.tag} style="text-align: {style.split(":", 1)[1]};">'
    return f"<{token.tag}>"


def _silence_quoted_mentions(state: StateCore) -> None:
    """Mentions inside a block quote are silent (Zulip's BlockQuoteProcessor): run after
    the block parse, before the inline rules read the text."""
    depth = 0
    for token in state.tokens:
        if token.type in ("blockquote_open", "blockquote_close"):
            depth += token.nesting
        elif token.type == "inline" and depth > 0 and "@" in token.content:
            token.content = silence_mentions(token.content)


@lru_cache(maxsize=1)
def _engine() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False})
    md.enable("table")
    # Zulip has no raw HTML, reference links, setext headings; fences are handled before.
    md.disable(["html_block", "reference", "lheading", "fence"])
    md.block.ruler.at("paragraph", _paragraph)
    inline.install(md)
    md.core.ruler.before("inline", "zulip_quoted_mentions", _silence_quoted_mentions)
    rules: dict[str, Any] = {
        "text": _render_text,
        "code_inline": _render_code_inline,
        "softbreak": _render_softbreak,
        "code_block": _render_code_block,
        "list_item_open": _render_list_item_open,
        "paragraph_close": _render_paragraph_close,
        "bullet_list_open": _render_list_open,
        "ordered_list_open": _render_list_open,
        "th_open": _render_cell_open,
        "td_open": _render_cell_open,
    }
    for name, rule in rules.items():
        md.add_render_rule(name, rule)
    return md


def upload_previews(ctx: RenderContext) -> Mapping[str, UploadPreview] | None:
    """The previews of the uploaded images the caller loaded for this message
    (``RenderContext.upload_previews``, from ``queries.image_attachments``), or None when
    it loaded none (then uploads are previewed by their file name, as Zulip does without
    database data)."""
    previews: Mapping[str, UploadPreview] | None = getattr(ctx, "upload_previews", None)
    return previews


def _link_text(children: list[Token], start: int) -> tuple[str, int]:
    parts, depth, i = [], 0, start
    while i < len(children):
        child = children[i]
        if child.type == "link_open":
            depth += 1
        elif child.type == "link_close":
            depth -= 1
            if depth == 0:
                break
        elif child.type == "text":
            parts.append(child.content)
        i += 1
    return "".join(parts), i


def _add_image_previews(
    tokens: list[Token], result: RenderResult, ctx: RenderContext
) -> list[Token]:
    uploads = upload_previews(ctx)
    out: list[Token] = []
    seen: set[str] = set()
    quote_depth = 0
    i = 0
    while i < len(tokens):
        token = tokens[i]
        quote_depth += token.nesting if token.type.startswith("blockquote") else 0
        is_paragraph = (
            token.type == "paragraph_open"
            and i + 2 < len(tokens)
            and tokens[i + 1].type == "inline"
            and tokens[i + 2].type == "paragraph_close"
        )
        if not is_paragraph or quote_depth > 0:
            out.append(token)
            i += 1
            continue
        children = tokens[i + 1].children or []
        previews: list[str] = []
        only_link = False
        for j, child in enumerate(children):
            if child.type != "link_open":
                continue
            href = str(child.attrs.get("href", ""))
            attrs = image_attributes(href, ctx.realm_url, uploads)
            if attrs is None:
                continue
            result.has_image = True
            text, close = _link_text(children, j)
            named = text != href
            only_link = j == 0 and close == len(children) - 1 and not named
            if href in seen:
                continue
            seen.add(href)
            previews.append(preview_html(href, text if named else None, attrs))
        # A paragraph that is nothing but one bare image URL is replaced by its preview.
        if not (only_link and len(previews) == 1):
            out.extend(tokens[i : i + 3])
        if previews:
            block = Token("html_block", "", 0)
            block.content = "".join(previews)
            out.append(block)
        i += 3
    return out


def _find_alert_words(text: str, words: Sequence[str]) -> set[str]:
    found: set[str] = set()
    lowered = text.lower()
    for word in words:
        needle = word.lower()
        if not needle:
            continue
        for m in re.finditer(re.escape(needle), lowered):
            start, end = m.start(), m.end()
            if (start == 0 or lowered[start - 1] in _ALERT_BEFORE) and (
                end >= len(lowered) or lowered[end] in _ALERT_AFTER
            ):
                found.add(word)
                break
    return found


def find_alert_words(rendered: RenderResult, words: Sequence[str]) -> set[str]:
    """Which of ``words`` the rendered message holds: for a caller that learns whose alert
    words count only after rendering (a send rendered before SQLite's writer)."""
    return _find_alert_words(rendered.alert_text, words)


def prepare_content(content: str) -> str:
    """The content as the renderer reads it: placeholder delimiters removed and cut at
    the message length limit."""
    content = content.translate(_MARKER_CHARS)
    if len(content) > MAX_RENDERED_LENGTH:
        content = content[: MAX_RENDERED_LENGTH - len(TRUNCATED_SUFFIX)] + TRUNCATED_SUFFIX
    return content


def render_markdown(content: str, ctx: RenderContext) -> RenderResult:
    """Render a message's Markdown as Zulip 10.2 does and collect its mentions and links."""
    content = prepare_content(content)
    result = RenderResult()
    stash = Stash()
    list_starts: dict[int, int] = {}
    text = preprocess(content, stash, list_starts)
    result.alert_text = PLACEHOLDER_RE.sub(" ", text)
    result.alert_words = _find_alert_words(result.alert_text, ctx.alert_words)
    md = _engine()
    env: dict[str, Any] = {
        "ctx": ctx,
        "result": result,
        "link_depth": 0,
        "tex_budget": stash.tex_budget,
    }
    tokens = md.parse(text, env)
    for token in tokens:
        if token.type == "ordered_list_open" and token.map and token.map[0] in list_starts:
            start = list_starts[token.map[0]]
            if start == 1:
                token.attrs.pop("start", None)
            else:
                token.attrs["start"] = start
    if ctx.inline_image_preview:
        tokens = _add_image_previews(tokens, result, ctx)
    html = md.renderer.render(tokens, md.options, env)

    def block_placeholder(m: re.Match[str]) -> str:
        stored = stash.get(m.group(1))
        return stored if stored.startswith(("<div", "</div")) else f"<p>{stored}</p>"

    html = re.sub(r"<p>\x02stash(\d+)\x03</p>", block_placeholder, html)
    html = PLACEHOLDER_RE.sub(lambda m: stash.get(m.group(1)), html)
    result.html = sanitize_html(html.rstrip("\n"))
    return result
