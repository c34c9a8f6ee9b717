"""Worst-case Markdown rendering times: adversarial inputs at the message length cap.

Each input is about 10,000 characters (Zulip's message length limit), built to defeat a
renderer that rescans: unclosed brackets, emphasis runs, backticks, nesting, links,
mentions, tables, quotes and lists. The script renders each through ``render_markdown``
with a realistic context (users, groups, streams, a linkifier) and prints the best of a
few runs in milliseconds, with the ratio to the time of the same input at half the length
(about 2 when rendering is linear, about 4 when it is quadratic), failing when one exceeds
the budget.

Run: ``.venv/bin/python bench/render_worst_case.py [--length 10000] [--budget-ms 150]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from hubbub.markdown import (
    LinkableStream,
    Linkifier,
    MentionableGroup,
    MentionableUser,
    RenderContext,
    render_markdown,
)


def _fill(unit: str, length: int) -> str:
    return (unit * (length // len(unit) + 1))[:length]


def cases(n: int) -> dict[str, str]:
    half = n // 2
    return {
        "open brackets [": "[" * n,
        "close brackets ]": "]" * n,
        "bracket pairs [](": _fill("[](", n),
        "nested brackets [[[x]]]": "[" * half + "x" + "]" * (half - 1),
        "open link labels [a](": _fill("[a](", n),
        "unclosed parens [a](((": "[a]" + "(" * (n - 3),
        "nested parens": "[a](" + "(" * half + ")" * (half - 4),
        "stars *": "*" * n,
        "star words *a": _fill("*a ", n),
        "double stars **a": _fill("**a ", n),
        "triple stars ***a": _fill("***a ", n),
        "tildes ~~a": _fill("~~a ", n),
        "backticks `": "`" * n,
        "backtick runs `` ` ``": _fill("`` ` ", n),
        "backtick words `a": _fill("`a ", n),
        "dollars $$": _fill("$$a ", n),
        "mentions @**": _fill("@**a ", n),
        "silent mentions @_**": _fill("@_**a ", n),
        "group mentions @*": _fill("@*a ", n),
        "stream links #**": _fill("#**a ", n),
        "stream topic links #**a>": _fill("#**a>b ", n),
        "timestamps <time:": _fill("<time:", n),
        "emoji colons :a": _fill(":a", n),
        "colons :": ":" * n,
        "entities &": _fill("&#", n),
        "urls http://": _fill("http://a.com/( ", n),
        "url parens": "http://a.com/" + "(" * (n - 13),
        "bare domains": _fill("a.b.c.d.e.", n),
        "emails": _fill("a@b.", n),
        "linkifier #1": _fill("#1 ", n),
        "quotes >": ">" * n,
        "quote lines": _fill("> a\n", n),
        "nested quote lines": "\n".join(">" * i + " a" for i in range(1, 200))[:n],
        "list nesting": "\n".join(" " * (2 * i) + "* a" for i in range(0, 100))[:n],
        "list items": _fill("* a\n", n),
        "ordered items": _fill("1. a\n", n),
        "table pipes": "|a|b|\n|-|-|\n" + _fill("|a", n - 12),
        "table rows": "|a|b|\n|-|-|\n" + _fill("|a|b|\n", n - 12),
        "wide table": "|" + "a|" * 500 + "\n|" + "-|" * 500 + "\n" + "|" + "b|" * 500,
        "fences ```": _fill("```\n", n),
        "spoiler fences": _fill("```spoiler a\n", n),
        "quote fences": _fill("```quote\n", n),
        "math fences": "```math\n" + _fill("x^", n - 12) + "\n```",
        "math fence paragraphs": "```math\n" + _fill("x\n\n", n - 12) + "\n```",
        "tex superscripts": "$$" + _fill("x^", n - 5) + "x$$",
        "tex braces": "$$" + "{" * (half - 3) + "x" + "}" * (half - 3) + "$$",
        "tex fractions": "$$" + _fill("\\frac{1}{", n - 4) + "$$",
        "tex text": "$$\\text{" + _fill("<b>&", n - 12) + "}$$",
        "plain paragraphs": _fill("a\n\n", n),
        "many inline tex": _fill("$$x$$ ", n),
        "headings #": _fill("# a\n", n),
        "newlines": "\n" * n,
        "mixed markup": _fill("**[a](http://a.com) `b` *c* @**d** :e: ~~f~~ ", n),
        "links with titles": _fill('[a](http://a.com "t") ', n),
        "image links": _fill("[a](http://a.com/x.png) ", n),
        "unclosed star link": _fill("*[a", n),
        "emoticons": _fill(":) ", n),
        "unicode emoji": _fill("😀", n),
    }


def context() -> RenderContext:
    users = [MentionableUser(id=i, full_name=f"user {i}", email=f"u{i}@x.com") for i in range(50)]
    return RenderContext(
        realm_url="http://zulip.example",
        users=users,
        user_groups=[MentionableGroup(id=1, name="a")],
        streams=[LinkableStream(id=1, name="a")],
        linkifiers=[
            Linkifier(id=1, pattern=r"#(?P<id>[0-9]+)", url_template="https://t.example/{id}")
        ],
        translate_emoticons=True,
    )


def measure(render: Callable[[], object], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        render()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--length", type=int, default=10000)
    parser.add_argument("--budget-ms", type=float, default=150.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", help="run only the cases whose name contains this")
    args = parser.parse_args()
    ctx = context()
    render_markdown("warm up $$x$$ ```python\na\n```", ctx)
    worst = 0.0
    over = []
    halves = cases(args.length // 2)
    for name, text in cases(args.length).items():
        if args.only and args.only not in name:
            continue
        ms = measure(lambda text=text: render_markdown(text, ctx), args.runs)
        half = measure(lambda text=halves[name]: render_markdown(text, ctx), args.runs)
        worst = max(worst, ms)
        flag = "  OVER" if ms > args.budget_ms else ""
        ratio = ms / half if half > 0.05 else float("nan")
        print(f"{name:32} {len(text):6} chars {ms:9.1f} ms  x{ratio:4.1f}{flag}", flush=True)
        if flag:
            over.append(name)
    print(f"worst: {worst:.1f} ms; budget {args.budget_ms:.0f} ms; over budget: {over or 'none'}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
