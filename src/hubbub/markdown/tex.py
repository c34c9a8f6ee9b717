"""TeX math to HTML inside Zulip's KaTeX span structure.

Zulip renders math with KaTeX (a Node.js program). hubbub stays pure Python, so it converts
TeX with ``latex2mathml`` (maintained, pure Python, no Node) and wraps the MathML in the same
``span.katex`` / ``span.katex-display`` structure, with the TeX source as the
``application/x-tex`` annotation that clients use for copy and re-rendering. KaTeX's
hand-positioned ``katex-html`` glyph tree cannot be produced without KaTeX; in its place
``katex-html`` carries the TeX source as text, so clients that hide ``katex-mathml`` still show
something readable.
"""

from __future__ import annotations

import re
from html import escape

_MATH_OPEN = re.compile(r'^<math xmlns="http://www.w3.org/1998/Math/MathML" display="\w+">')
# latex2mathml emits an unknown control sequence as an identifier holding the backslash.
_UNKNOWN_COMMAND = re.compile(r"<mi>\\")


def _hex_entities_to_chars(mathml: str) -> str:
    return re.sub(
        r"&#x([0-9A-Fa-f]+);",
        lambda m: escape(chr(int(m.group(1), 16)), quote=False),
        mathml,
    )


def render_tex(tex: str, *, display: bool) -> str | None:
    """HTML for ``tex``, or None when it is not valid TeX."""
    # Imported on first use: ~3 MB that a server which never renders TeX does not hold.
    from latex2mathml.converter import convert

    try:
        mathml = convert(tex, display="block" if display else "inline")
    except Exception:  # latex2mathml raises many exception types on bad input
        return None
    if _UNKNOWN_COMMAND.search(mathml):
        return None
    opening = _MATH_OPEN.match(mathml)
    if opening is None or not mathml.endswith("</math>"):
        return None
    body = _hex_entities_to_chars(mathml[opening.end() : -len("</math>")])
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
