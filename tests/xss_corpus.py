"""A corpus of known XSS payloads, wrapped in every piece of Zulip markup, and a checker
that reads rendered HTML with an HTML5 parser (html5lib) as a browser would."""

from __future__ import annotations

import re
from collections.abc import Iterator
from xml.etree.ElementTree import Element

import html5lib

# Classic vectors: script, event handlers, URL schemes, attribute breaking, encodings,
# parser confusion (comments, CDATA, foreign content, raw-text elements).
PAYLOADS = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//x.example/x.js></SCRIPT>",
    "<scr<script>ipt>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<img/src="x"/onerror=alert(1)>',
    "<img src=`x` onerror=alert(1)>",
    "<IMG SRC=javascript:alert('XSS')>",
    '<img src="jav&#x09;ascript:alert(1)">',
    "<img src=&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)>",
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    "<svg><a xlink:href='javascript:alert(1)'><text>x</text></a></svg>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    '<math href="javascript:alert(1)">x</math>',
    "<body onload=alert(1)>",
    "<iframe src=javascript:alert(1)></iframe>",
    "<iframe srcdoc='<script>alert(1)</script>'></iframe>",
    "<object data=javascript:alert(1)>",
    "<embed src=javascript:alert(1)>",
    "<a href=javascript:alert(1)>x</a>",
    '<a href="JaVaScRiPt:alert(1)">x</a>',
    '<a href=" javascript:alert(1)">x</a>',
    "<a href='vbscript:msgbox(1)'>x</a>",
    "<a href='data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg=='>x</a>",
    "<form action=javascript:alert(1)><input type=submit></form>",
    "<button formaction=javascript:alert(1)>x</button>",
    "<input onfocus=alert(1) autofocus>",
    "<details open ontoggle=alert(1)>",
    "<video><source onerror=alert(1)></video>",
    "<audio src=x onerror=alert(1)>",
    "<marquee onstart=alert(1)>",
    "<div style=\"background:url('javascript:alert(1)')\">x</div>",
    '<div style="width: expression(alert(1))">x</div>',
    "<style>@import 'javascript:alert(1)';</style>",
    "<link rel=stylesheet href=javascript:alert(1)>",
    "<meta http-equiv=refresh content='0;url=javascript:alert(1)'>",
    "<base href=javascript:alert(1)//>",
    "<!--<img src=x onerror=alert(1)>-->",
    "<![CDATA[<img src=x onerror=alert(1)>]]>",
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>">',
    "<textarea></textarea><img src=x onerror=alert(1)>",
    "<title></title><img src=x onerror=alert(1)>",
    "<template><img src=x onerror=alert(1)></template>",
    "<xmp><img src=x onerror=alert(1)></xmp>",
    '"><img src=x onerror=alert(1)>',
    "'><img src=x onerror=alert(1)>",
    '" onmouseover="alert(1)',
    "' onmouseover='alert(1)",
    "` onmouseover=alert(1) `",
    "javascript:alert(1)",
    "JAVASCRIPT:alert(1)",
    "java\tscript:alert(1)",
    " \x01javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "&#60;script&#62;alert(1)&#60;/script&#62;",
    "&#x3C;img src=x onerror=alert(1)&#x3E;",
    "\uff1cscript\uff1ealert(1)\uff1c/script\uff1e",
    "<scr\u0130pt>alert(1)</scr\u0130pt>",
    "\u202e<img src=x onerror=alert(1)>",
    "<a href='#' onclick='alert(1)'>x</a>",
    "<span class='user-mention' data-user-id='1' onclick='alert(1)'>@x</span>",
    "</code></pre><script>alert(1)</script>",
    "</span></p><img src=x onerror=alert(1)>",
    "\x02stash0\x03",
    "\x02stash99\x03<img src=x onerror=alert(1)>",
]

TEX_PAYLOADS = [
    r'\text{<img/src="x"/onerror=alert(1)>}',
    r"\textrm{<script>alert(1)</script>}",
    r"\mbox{<svg onload=alert(1)>}",
    r'\textbf{"><img src=x onerror=alert(1)>}',
    r"\texttt{</mtext></math><img src=x onerror=alert(1)>}",
    r"\textit{<iframe src=javascript:alert(1)>}",
    r"\href{javascript:alert(1)}{x}",
    r"\href{data:text/html,<script>alert(1)</script>}{x}",
    r"\url{javascript:alert(1)}",
    r"\style{background:url(javascript:alert(1))}{x}",
    r"\style{color:red;behavior:url(x)}{x}",
    r'\class{x" onmouseover="alert(1)}{y}',
    r"\htmlId{x}{y}",
    r"\htmlData{onclick=alert(1)}{x}",
    r"\operatorname{<img src=x onerror=alert(1)>}",
    r"\mathrm{<b>}",
    r"\text{&#x3C;img src=x onerror=alert(1)&#x3E;}",
    r"\text{&lt;img src=x onerror=alert(1)&gt;}",
    r"\color{javascript:alert(1)}{x}",
    r"x^{\text{<script>}}_{\mbox{<img src=x onerror=1>}}",
]


def _wrappers(payload: str) -> Iterator[str]:
    yield payload
    yield f"**{payload}**"
    yield f"*{payload}*"
    yield f"~~{payload}~~"
    yield f"`{payload}`"
    yield f"```\n{payload}\n```"
    yield f"```python\n{payload}\n```"
    yield f"> {payload}"
    yield f"```quote\n{payload}\n```"
    yield f"```spoiler {payload}\n{payload}\n```"
    yield f"* {payload}\n  1. {payload}"
    yield f"| a | b |\n| --- | :-: |\n| {payload} | x |"
    yield f"# {payload}"
    yield f"[{payload}](https://example.com)"
    yield f"[x]({payload})"
    yield f'[x](https://example.com "{payload}")'
    yield f"[x](<{payload}>)"
    yield f"[{payload}]({payload})"
    yield f"https://example.com/{payload}"
    yield f"[x](https://example.com/{payload}.png)"
    yield f"@**{payload}**"
    yield f"@_**{payload}**"
    yield f"@*{payload}*"
    yield f"#**{payload}**"
    yield f"#**general>{payload}**"
    # Channels named after the payloads: topic, message and empty-topic links.
    yield f"#**{payload}>{payload}**"
    yield f"#**{payload}>{payload}@1**"
    yield f"#**{payload}>**"
    yield f":{payload}:"
    yield f"<time:{payload}>"
    yield f"!avatar({payload})"
    yield f"!gravatar({payload})"
    yield f"$${payload}$$"
    yield f"```math\n{payload}\n```"
    yield f"#{payload} JS-{payload}"


def message_corpus() -> list[str]:
    corpus = [wrapped for payload in PAYLOADS for wrapped in _wrappers(payload)]
    for tex in TEX_PAYLOADS:
        corpus += [f"$${tex}$$", f"```math\n{tex}\n```", f"> $${tex}$$", f"* $${tex}$$"]
    return corpus


# The elements Zulip's message markup uses (HTML, and MathML for TeX).
SAFE_ELEMENTS = {
    "a", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5",
    "h6", "hr", "img", "li", "ol", "p", "pre", "span", "strong", "table", "tbody", "td",
    "th", "thead", "time", "tr", "ul", "video",
    "math", "semantics", "annotation", "menclose", "mfrac", "mi", "mn", "mo", "mover",
    "mpadded", "mphantom", "mroot", "mrow", "ms", "mspace", "msqrt", "mstyle", "msub",
    "msubsup", "msup", "mtable", "mtd", "mtext", "mtr", "munder", "munderover",
}  # fmt: skip
_BAD_SCHEME = re.compile(r"(?i)^(?:javascript|data|vbscript):")
_URL_NOISE = re.compile(r"[\x00-\x20]")
_URL_ATTRIBUTES = {
    "href", "src", "action", "formaction", "poster", "background", "xlink:href", "srcdoc",
    "data", "data-src-fullsize", "data-video-original-url", "data-transcoded-image",
}  # fmt: skip
_CELL_STYLE = re.compile(r"text-align: (?:left|center|right);")


def _local(name: str) -> str:
    return name.rsplit("}", 1)[-1].lower()


def problems(markup: str) -> list[str]:
    """Everything script-capable in ``markup`` as an HTML5 parser sees it."""
    found: list[str] = []
    root: Element = html5lib.parseFragment(
        markup, container="div", treebuilder="etree", namespaceHTMLElements=False
    )
    for element in root.iter():
        if not isinstance(element.tag, str) or element is root:
            continue  # comments
        tag = _local(element.tag)
        if tag not in SAFE_ELEMENTS:
            found.append(f"element <{tag}>")
        for raw_name, value in element.attrib.items():
            name = _local(raw_name)
            if name.startswith("on"):
                found.append(f"event handler {name} on <{tag}>")
            if name == "style" and not _CELL_STYLE.fullmatch(value):
                found.append(f"style {value!r} on <{tag}>")
            if (name in _URL_ATTRIBUTES or raw_name.endswith("}href")) and _BAD_SCHEME.match(
                _URL_NOISE.sub("", value)
            ):
                found.append(f"{name}={value!r} on <{tag}>")
            if tag not in {"a", "img", "video"} and name in {"href", "src"}:
                found.append(f"{name} on <{tag}>")
    return found
