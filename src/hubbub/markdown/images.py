"""Inline image previews: which links get one, and the HTML of each.

An uploaded image is previewed as Zulip 10.2 previews it (feature levels 276 and 336): the
link's ``<img>`` names the default thumbnail and says the original's size, type and
whether it is animated. Which uploads are images is known from their ``image_attachment``
rows, which the caller loads (``UploadPreview``, keyed by path id) and hands to the
renderer with the rest of the render context: as in Zulip, a link to an upload is
previewed exactly when its row exists, whatever its file name says. A caller that loaded
no rows (``None``) gets Zulip's rendering without database data: a link whose path ends
like an image is previewed with the file itself.

Other images keep Zulip 8.0's form, ``/thumbnail?url=...&size=...``: hubbub has no camo
proxy for ``/external_content/``, and ``GET /thumbnail`` sends the client on to the image
(``api/uploads.py``), so every URL in a preview is one hubbub serves. Links within the
realm are previewed with their own URL, which Zulip never rewrites either.

Attributes are written in alphabetical order, as Zulip's serializers write them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

from markdown_it.common.utils import escapeHtml

from hubbub.markdown.links import is_image_url

UPLOADS_PREFIX = "/user_uploads/"


@dataclass(frozen=True)
class UploadPreview:
    """What a preview of one uploaded image says (from its ``image_attachment`` row)."""

    # The default thumbnail's URL, /user_uploads/thumbnail/<path id>/<format name>.
    thumbnail_url: str
    width: int
    height: int
    content_type: str | None = None
    animated: bool = False
    # The large WebP a type browsers cannot show is also made in (feature level 336).
    transcoded: str | None = None


def _legacy_thumbnail(url: str, size: str) -> str:
    return f"/thumbnail?url={quote(url, safe='')}&size={size}"


def _is_own(url: str, realm_url: str) -> bool:
    """A relative URL, or one on the realm's own host: never sent through a proxy."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    if not parts.scheme and not parts.netloc:
        return True
    return bool(realm_url) and parts.netloc == urlsplit(realm_url).netloc


def _upload_attrs(preview: UploadPreview) -> dict[str, str]:
    attrs = {
        "data-original-dimensions": f"{preview.width}x{preview.height}",
        "src": preview.thumbnail_url,
    }
    if preview.content_type:
        attrs["data-original-content-type"] = preview.content_type
    if preview.animated:
        attrs["data-animated"] = "true"
    if preview.transcoded:
        attrs["data-transcoded-image"] = preview.transcoded
    return attrs


def image_attributes(
    href: str, realm_url: str, uploads: Mapping[str, UploadPreview] | None
) -> dict[str, str] | None:
    """The ``<img>`` attributes of the preview a link gets, or None when it gets none."""
    if href.startswith(UPLOADS_PREFIX) and uploads is not None:
        path_id = href[len(UPLOADS_PREFIX) :]
        preview = uploads.get(path_id) or uploads.get(unquote(path_id))
        return _upload_attrs(preview) if preview is not None else None
    if not is_image_url(href):
        return None
    if _is_own(href, realm_url):
        return {"src": href}
    return {
        "data-src-fullsize": _legacy_thumbnail(href, "full"),
        "src": _legacy_thumbnail(href, "thumbnail"),
    }


def preview_html(href: str, title: str | None, attrs: Mapping[str, str]) -> str:
    """``<div class="message_inline_image">`` around a link to ``href`` and its image."""
    title_attr = f' title="{escapeHtml(title)}"' if title else ""
    img_attrs = "".join(f' {name}="{escapeHtml(attrs[name])}"' for name in sorted(attrs))
    return (
        f'<div class="message_inline_image"><a href="{escapeHtml(href)}"{title_attr}>'
        f"<img{img_attrs}></a></div>"
    )
