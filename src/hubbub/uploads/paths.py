"""Path ids (``"<realm id>/<random>/<file name>"``), file names, and upload links in content."""

from __future__ import annotations

import mimetypes
import re
import secrets
import unicodedata
from urllib.parse import unquote

# A path segment: letters, digits (any script), "_", "." and "-" only.
_SEGMENT_RE = re.compile(r"^[\w.-]+$")
_UNSAFE_RE = re.compile(r"[^\w\s.-]")
_DASHES_RE = re.compile(r"[-\s]+")
FALLBACK_NAME = "uploaded-file"
MAX_NAME_LENGTH = 180

# Served inline (shown by the browser); every other type is a download, so a browser
# never runs an uploaded page or script in the server's origin (Zulip's list at 8.0).
INLINE_TYPES = frozenset({"application/pdf", "image/gif", "image/jpeg", "image/png", "image/webp"})

# "/user_uploads/<path id>" in a message: relative, or after the server's address.
_LINK_RE = re.compile(r"(?:^|(?<=[\s(<\[\"'=/]))/?user_uploads/(\d+/[^\s)\]>\"'?#]+)")


def sanitize_file_name(name: str) -> str:
    """A file name safe in a path and a URL: Unicode letters kept, other symbols dropped,
    spaces become dashes (Zulip's rules, so links look alike)."""
    name = unicodedata.normalize("NFKC", name.replace("\\", "/").rsplit("/", 1)[-1])
    name = _DASHES_RE.sub("-", _UNSAFE_RE.sub("", name)).strip("._-")
    if len(name) > MAX_NAME_LENGTH:
        stem, dot, ext = name.rpartition(".")
        name = (stem[: MAX_NAME_LENGTH - len(ext) - 1] + dot + ext) if dot else name[:180]
    return name if name and _SEGMENT_RE.match(name) else FALLBACK_NAME


def new_path_id(realm_id: int, file_name: str) -> str:
    """A fresh, unguessable path id for an upload to ``realm_id``."""
    return "/".join(
        [
            str(realm_id),
            secrets.token_hex(1),
            secrets.token_urlsafe(18),
            sanitize_file_name(file_name),
        ]
    )


def check_path_id(path_id: str) -> str:
    """``path_id`` if it is a well-formed relative path, else ValueError: no "..", no
    leading "/", no empty segments, nothing but word characters, "." and "-"."""
    parts = path_id.split("/")
    if (
        len(parts) < 2
        or not parts[0].isascii()
        or not parts[0].isdigit()
        or any(p in ("", ".", "..") or not _SEGMENT_RE.match(p) for p in parts)
    ):
        raise ValueError(f"invalid path id: {path_id!r}")
    return path_id


def is_valid_path_id(path_id: str) -> bool:
    try:
        check_path_id(path_id)
    except ValueError:
        return False
    return True


def path_ids_in(content: str) -> list[str]:
    """The path ids of upload links in message content, in order, without repeats."""
    found: dict[str, None] = {}
    for match in _LINK_RE.finditer(content):
        path_id = unquote(match.group(1)).rstrip(".,;:!")
        if is_valid_path_id(path_id):
            found[path_id] = None
    return list(found)


def guess_content_type(file_name: str) -> str:
    return mimetypes.guess_type(file_name)[0] or "application/octet-stream"


def is_inline_type(content_type: str) -> bool:
    return content_type.split(";")[0].strip().lower() in INLINE_TYPES
