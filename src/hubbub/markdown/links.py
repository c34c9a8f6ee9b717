"""Bare-URL detection, URL sanitising and realm-relative rewriting."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from urllib.parse import urlsplit

# File extensions that are also top-level domains but mostly mean files in chat.
_TLD_FALSE_POSITIVES = {"java", "md", "mov", "py", "zip"}
ALLOWED_SCHEMES = {"http", "https", "ftp", "mailto", "tel", "sms", "bitcoin", "file"}
_IMAGE_EXTENSIONS = (".bmp", ".gif", ".jpe", ".jpeg", ".jpg", ".png", ".webp")


@lru_cache(maxsize=1)
def top_level_domains() -> list[str]:
    """ICANN top-level domains from the Public Suffix List (the publicsuffixlist package).

    Its single-label entries are the delegated TLDs, kept current by the package's frequent
    releases; longest first so that the regex prefers ``.com`` over ``.co``.
    """
    text = resources.files("publicsuffixlist").joinpath("public_suffix_list.dat").read_text("utf-8")
    tlds: set[str] = set()
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("// ===END ICANN DOMAINS==="):
            break
        if not line or line.startswith("//") or "." in line or line[0] in "!*":
            continue
        tlds.add(line.encode("idna").decode("ascii") if not line.isascii() else line)
        if not line.isascii():
            tlds.add(line)
    tlds -= _TLD_FALSE_POSITIVES
    return sorted(tlds, key=lambda t: (-len(t), t))


@lru_cache(maxsize=1)
def web_link_re() -> re.Pattern[str]:
    inner = r"[^\s()\"]*"
    group = r"[^\s()\"]*?(?:\(%s\)[^\s()\"]*?)*"
    nested = group
    for _ in range(6):
        nested = nested % (group,)
    nested = nested % (inner,)
    tlds = "|".join(re.escape(t) for t in top_level_domains())
    return re.compile(
        r"(?<![^\s'\"\(,:<])"
        r"(?P<url>"
        r"(?:(?:https?://[\w.:@-]+?|(?:[\w-]+\.)+(?:" + tlds + r"))"
        r"(?:/" + nested + r")?)"
        r"|(?:[\w.-]+@[\w.-]+\.[\w]+)"
        r"|(?:bitcoin:[13][a-km-zA-HJ-NP-Z1-9]{25,34})"
        r")"
        r"(?=[!:;\?\),\.\'\"\>]*(?:\Z|\s))"
    )


def sanitize_url(url: str) -> str | None:
    """The URL if it is safe to link, else None (no ``javascript:`` and friends)."""
    url = url.strip()
    try:
        parts = urlsplit(url.replace("\\", "/"))
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if not scheme:
        if url.startswith(("/", "#", "?")) or parts.netloc:
            return url
        if "@" in url and "/" not in url and ":" not in url:
            return "mailto:" + url
        return "http://" + url
    if scheme not in ALLOWED_SCHEMES:
        return None
    if scheme in ("http", "https", "ftp") and not parts.netloc:
        return None
    return url


def autolink_href(url: str) -> str:
    if re.match(r"(?i)https?://", url) or url.lower().startswith("bitcoin:"):
        return url
    if "@" in url and "/" not in url:
        return "mailto:" + url
    return "http://" + url


def relative_to_realm(url: str, realm_url: str) -> str:
    """Links into the realm's own app (``#narrow/...``) and uploads become relative."""
    if realm_url:
        prefix = realm_url.rstrip("/") + "/"
        if url.startswith((prefix + "#", prefix + "user_uploads/")):
            return url[len(prefix) :]
    return url


def is_image_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced IPv6 bracket, for one
        return False
    return parts.scheme in ("http", "https", "") and parts.path.lower().endswith(_IMAGE_EXTENSIONS)


def upload_path_id(url: str, realm_url: str) -> str | None:
    """``2/ab/xyz/file.png`` for a link to one of the realm's uploads, else None."""
    url = relative_to_realm(url, realm_url)
    m = re.match(r"^/?user_uploads/(?P<path>[^?#]+)", url)
    return m.group("path") if m else None
