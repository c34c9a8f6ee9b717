"""Emoji names, codes and their HTML.

Zulip names emoji after Google's emoji set with its own curated names (``:smile:`` is
U+1F642, not the ``emoji`` package's U+1F604). The ``zulip-emoji-mapping`` package ships
exactly that table (code -> canonical name and aliases), so names and titles match what
Zulip clients expect.
"""

from __future__ import annotations

import re
from functools import lru_cache
from html import escape

from hubbub.markdown.context import RealmEmoji

# Zulip's own emoji, rendered from the static image set.
ZULIP_EMOJI_URL = "/static/generated/emoji/images/emoji/unicode/zulip.png"

EMOJI_NAME_RE = re.compile(r":([\w\-\+]+):")

# Emoticons translated when the sender enabled translate_emoticons.
EMOTICONS: dict[str, str] = {
    ":)": "smile",
    "(:": "smile",
    ":(": "frown",
    "<3": "heart",
    ":|": "neutral",
    ":/": "confused",
    ";)": "wink",
    ":D": "grinning",
    ":o": "open_mouth",
    ":O": "open_mouth",
    ":p": "stuck_out_tongue",
    ":P": "stuck_out_tongue",
}
_TERMINALS = r",.;?!()\[\] \"'\n\t"
EMOTICON_RE = re.compile(
    rf"(?<![^{_TERMINALS}])("
    + "|".join(re.escape(e) for e in sorted(EMOTICONS, key=len, reverse=True))
    + rf")(?![^{_TERMINALS}])"
)


@lru_cache(maxsize=1)
def _tables() -> tuple[dict[str, str], dict[str, str]]:
    # Imported on first use: the mapping module is one large literal, megabytes of memory
    # that an idle server (or one whose messages carry no emoji) does not need.
    from zulip_emoji_mapping.emoji_names import (  # type: ignore[import-untyped,unused-ignore]
        EMOJI_NAME_MAPS,
    )

    name_to_code: dict[str, str] = {}
    code_to_name: dict[str, str] = {}
    for code, data in EMOJI_NAME_MAPS.items():
        canonical = str(data["canonical_name"])
        code_to_name[code] = canonical
        name_to_code[canonical] = code
        for alias in data["aliases"]:
            name_to_code.setdefault(str(alias), code)
    return name_to_code, code_to_name


def code_for_name(name: str) -> str | None:
    return _tables()[0].get(name)


def name_for_code(code: str) -> str | None:
    return _tables()[1].get(code)


def _emoji_chars() -> str:
    chars: set[str] = set()
    for code in _tables()[1]:
        for part in code.split("-"):
            cp = int(part, 16)
            if cp >= 0x80 and cp not in (0x200D, 0x20E3, 0xFE0F) and not 0x1F3FB <= cp <= 0x1F3FF:
                chars.add(chr(cp))
    return "".join(re.escape(c) for c in sorted(chars))


@lru_cache(maxsize=1)
def unicode_emoji_re() -> re.Pattern[str]:
    """A candidate emoji sequence: a flag pair, a keycap, or emoji joined by ZWJ.

    The whole candidate is looked up; an unknown sequence stays text (as in Zulip, a
    newer ZWJ sequence is not split into the older emoji it is made of).
    """
    base = f"[{_emoji_chars()}]"
    modifiers = "[\ufe0f\U0001f3fb-\U0001f3ff]*"
    unit = f"{base}{modifiers}"
    flag = "[\U0001f1e6-\U0001f1ff]{2}"
    keycap = "[#*0-9]\ufe0f?\u20e3"
    return re.compile(f"{flag}|{keycap}|{unit}(?:\u200d{unit})*")


def code_for_unicode(text: str) -> str | None:
    code = "-".join(f"{ord(c):04x}" for c in text if c != "\ufe0f")
    return code if code in _tables()[1] else None


def unicode_emoji_html(code: str) -> str:
    name = name_for_code(code) or code
    return emoji_span(code, name)


def emoji_span(code: str, name: str) -> str:
    title = escape(name.replace("_", " "))
    return (
        f'<span aria-label="{title}" class="emoji emoji-{code}" role="img" title="{title}">'
        f":{escape(name)}:</span>"
    )


def image_emoji_html(name: str, url: str) -> str:
    return (
        f'<img alt=":{escape(name)}:" class="emoji" src="{escape(url)}" '
        f'title="{escape(name.replace("_", " "))}">'
    )


def named_emoji_html(name: str, realm_emoji: RealmEmoji | None) -> str | None:
    """HTML for ``:name:``, or None when no such emoji exists."""
    if realm_emoji is not None:
        return image_emoji_html(name, realm_emoji.source_url)
    if name == "zulip":
        return image_emoji_html(name, ZULIP_EMOJI_URL)
    code = code_for_name(name)
    if code is None:
        return None
    return emoji_span(code, name)


# The emoji data file clients download (``server_emoji_data_url``, feature level 140):
# every Unicode emoji code with its names, the canonical name first. Its path carries a
# key made of what decides its content, so a client may cache it for good; the content
# changes only with the installed mapping package (or this format's revision).
EMOJI_DATA_PATH = "/static/generated/emoji/emoji_api.{key}.json"
_EMOJI_DATA_REVISION = 1


@lru_cache(maxsize=1)
def emoji_data_key() -> str:
    """The key in the data file's path: cheap, so ``/register`` loads no emoji table."""
    from hashlib import sha256
    from importlib.metadata import version

    source = f"zulip-emoji-mapping {version('zulip-emoji-mapping')} r{_EMOJI_DATA_REVISION}"
    return sha256(source.encode()).hexdigest()[:16]


def emoji_data_path() -> str:
    return EMOJI_DATA_PATH.format(key=emoji_data_key())


@lru_cache(maxsize=1)
def emoji_data_json() -> bytes:
    """The data file (built once per process): ``{"code_to_names": {code: [names]}}``."""
    import orjson
    from zulip_emoji_mapping.emoji_names import (  # type: ignore[import-untyped,unused-ignore]
        EMOJI_NAME_MAPS,
    )

    code_to_names = {
        str(code): [str(data["canonical_name"]), *(str(alias) for alias in data["aliases"])]
        for code, data in EMOJI_NAME_MAPS.items()
    }
    return orjson.dumps({"code_to_names": code_to_names})
