"""Access to the render context and result from inside markdown-it inline rules."""

from __future__ import annotations

from markdown_it.rules_inline import StateInline

from hubbub.markdown.context import RenderContext, RenderResult


def ctx_of(state: StateInline) -> RenderContext:
    ctx: RenderContext = state.env["ctx"]
    return ctx


def result_of(state: StateInline) -> RenderResult:
    result: RenderResult = state.env["result"]
    return result


def push_html(state: StateInline, html: str) -> None:
    state.push("html_inline", "", 0).content = html
