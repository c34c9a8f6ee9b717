"""TeX math to HTML inside Zulip's KaTeX span structure.

Zulip renders math with KaTeX (a Node.js program). hubbub stays pure Python, so it converts
TeX with ``latex2mathml`` (maintained, pure Python, no Node) and wraps the MathML in the same
``span.katex`` / ``span.katex-display`` structure, with the TeX source as the
``application/x-tex`` annotation that clients use for copy and re-rendering. KaTeX's
hand-positioned ``katex-html`` glyph tree cannot be produced without KaTeX; in its place
``katex-html`` carries the TeX source as text, so clients that hide ``katex-mathml`` still show
something readable.

latex2mathml's own string output copies text verbatim (``\\text{<img ...>}`` would become
markup) and passes ``\\href``, ``\\style`` and ``\\class`` through as attributes, so the
element tree it builds is serialized here instead: only MathML elements and presentation
attributes are kept, and all text and attribute values are escaped.
"""

from __future__ import annotations

import contextlib
import re
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

# The presentation MathML that latex2mathml builds; anything else makes the TeX invalid.
MATHML_ELEMENTS = frozenset({
    "menclose", "mfrac", "mi", "mn", "mo", "mover", "mpadded", "mphantom", "mroot", "mrow",
    "ms", "mspace", "msqrt", "mstyle", "msub", "msubsup", "msup", "mtable", "mtd", "mtext",
    "mtr", "munder", "munderover",
})  # fmt: skip
# Presentation attributes only: no href, style, class, id or event handler survives.
MATHML_ATTRIBUTES = frozenset({
    "accent", "accentunder", "close", "columnalign", "columnlines", "columnspacing",
    "columnspan", "depth", "displaystyle", "fence", "form", "height", "largeop",
    "linethickness", "lspace", "mathbackground", "mathcolor", "mathsize", "mathvariant",
    "maxsize", "minsize", "movablelimits", "notation", "open", "rowalign", "rowlines",
    "rowspacing", "rowspan", "rspace", "scriptlevel", "separator", "stretchy", "symmetric",
    "voffset", "width",
})  # fmt: skip
# latex2mathml writes symbols as hexadecimal character references inside element text.
_HEX_REFERENCE = re.compile(r"&#x([0-9A-Fa-f]{1,6});")


class _UnsafeTex(Exception):
    """The converted tree holds something that is not plain presentation MathML."""


def _text(raw: str | None) -> str:
    if not raw:
        return ""

    def char(m: re.Match[str]) -> str:
        code = int(m.group(1), 16)
        return chr(code) if 0 < code < 0x110000 and not 0xD800 <= code < 0xE000 else "\ufffd"

    return escape(_HEX_REFERENCE.sub(char, raw), quote=False)


def _serialize(element: Element, out: list[str]) -> None:
    tag = element.tag
    if tag not in MATHML_ELEMENTS:
        raise _UnsafeTex(tag)
    # latex2mathml emits an unknown control sequence as an identifier holding the backslash.
    if tag == "mi" and (element.text or "").startswith("\\"):
        raise _UnsafeTex(tag)
    attrs = "".join(
        f' {name}="{escape(str(value))}"'
        for name, value in element.attrib.items()
        if name in MATHML_ATTRIBUTES
    )
    body: list[str] = [_text(element.text)]
    for child in element:
        _serialize(child, body)
        body.append(_text(child.tail))
    content = "".join(body)
    out.append(
        f"<{tag}{attrs}>{content}</{tag}>" if content or len(element) else f"<{tag}{attrs} />"
    )


def _mathml_body(tex: str, display: bool) -> str | None:
    # Imported on first use: megabytes that a server which never renders TeX does not hold.
    from latex2mathml.converter import convert_to_element

    try:
        math = convert_to_element(tex, display="block" if display else "inline")
    except Exception:  # latex2mathml raises many exception types on bad input
        return None
    if math.tag != "math" or math.text:
        return None
    out: list[str] = []
    try:
        for child in math:
            _serialize(child, out)
            out.append(_text(child.tail))
    except (_UnsafeTex, RecursionError):
        return None
    return "".join(out)


class TexBudget:
    """How many more formulas one message may show as math. A formula costs about a tenth
    of a millisecond to convert and some 400 characters of markup, so a message of
    thousands of tiny formulas is cut off here; the formulas past the limit are shown as
    their source, as invalid TeX is."""

    def __init__(self, remaining: int = 100) -> None:
        self.remaining = remaining


def render_tex(tex: str, *, display: bool, budget: TexBudget | None = None) -> str | None:
    """HTML for ``tex``, or None when it is not valid TeX (or ``budget`` is spent)."""
    if budget is not None:
        if budget.remaining <= 0:
            return None
        budget.remaining -= 1
    cached = _cached_tex.get((tex, display))
    if cached is not None:
        return cached[0]
    html = _render_tex(tex, display)
    if len(_cached_tex) >= _CACHE_SIZE:
        # Another thread may be trimming too; a miss here only leaves the cache a bit larger.
        with contextlib.suppress(StopIteration, RuntimeError, KeyError):
            del _cached_tex[next(iter(_cached_tex))]
    _cached_tex[(tex, display)] = (html,)
    return html


# Recent conversions, oldest first: repeated formulas (and re-renders of an edited
# message) are not converted again.
_CACHE_SIZE = 256
_cached_tex: dict[tuple[str, bool], tuple[str | None]] = {}


def _render_tex(tex: str, display: bool) -> str | None:
    body = _mathml_body(tex, display)
    if body is None:
        return None
    if not body.startswith("<mrow>"):
        body = f"<mrow>{body}</mrow>"
    display_attr = ' display="block"' if display else ""
    html = (
        '<span class="katex"><span class="katex-mathml">'
        f'<math xmlns="http://www.w3.org/1998/Math/MathML"{display_attr}><semantics>{body}'
        f'<annotation encoding="application/x-tex">{escape(tex)}</annotation>'
        "</semantics></math></span>"
        f'<span class="katex-html" aria-hidden="true">{escape(tex.strip(), quote=False)}</span>'
        "</span>"
    )
    if display:
        html = f'<span class="katex-display">{html}</span>'
    return html


def tex_error_html(source: str, *, display: bool) -> str:
    # Display blocks escape quotes too (as Zulip's fence handler does); inline ones do not.
    return f'<span class="tex-error">{escape(source, quote=display)}</span>'
