"""The headers a downloaded file is served with."""

from __future__ import annotations

from urllib.parse import quote

from hubbub.uploads.paths import is_inline_type

# What a served file may do when a browser opens it as a page: show itself (images,
# media, a PDF) and nothing else. No script runs, nothing is fetched from elsewhere, and
# no form posts anywhere, whatever the file contains.
FILE_CONTENT_SECURITY_POLICY = (
    "default-src 'none'; img-src 'self' data:; media-src 'self'; "
    "style-src 'unsafe-inline'; object-src 'self'; form-action 'none'; "
    "frame-ancestors 'self'; base-uri 'none'"
)


def content_disposition(file_name: str, content_type: str) -> str:
    """``inline`` for types a browser may safely show, ``attachment`` otherwise; the name
    quoted as RFC 6266 / RFC 8187 say (plain when ASCII, ``filename*`` otherwise)."""
    kind = "inline" if is_inline_type(content_type) else "attachment"
    if file_name.isascii():
        escaped = file_name.replace("\\", "\\\\").replace('"', '\\"')
        return f'{kind}; filename="{escaped}"'
    return f"{kind}; filename*=utf-8''{quote(file_name)}"


def file_headers(file_name: str, content_type: str, size: int) -> dict[str, str]:
    return {
        "Content-Type": content_type,
        "Content-Length": str(size),
        "Content-Disposition": content_disposition(file_name, content_type),
        # A path id never names two different files, so the bytes never change.
        "Cache-Control": "private, max-age=31536000, immutable",
        # Browsers must not guess a type other than the one sent (no HTML from a ".png").
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": FILE_CONTENT_SECURITY_POLICY,
    }
