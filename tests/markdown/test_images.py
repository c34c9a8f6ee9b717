"""Inline image previews in message HTML: uploaded images as Zulip 10.2 previews them
(thumbnail, original size and type, animation), uploads without an image row, and images
elsewhere (Zulip 8.0's /thumbnail links, which hubbub serves)."""

from __future__ import annotations

from collections.abc import Mapping

from hubbub.markdown import RenderContext, render_markdown
from hubbub.markdown.images import UploadPreview
from hubbub.markdown.render import upload_previews

REALM_URL = "http://zulip.testserver"
PNG = "2/ab/Ejq9uw2dRTTf8LbGYmFNJJD4/screenshot.png"
GIF = "2/cd/Ztg1hK9Ys3KBcKEe3hUjOKf4/party.gif"
TIFF = "2/ef/Vt5q2vOJ3ZJ9a6yVYb9qcT0X/scan.tiff"
TEXT = "2/0a/Q4xHk3b0dXmIxBn3bFfGkW1b/notes.txt"

PREVIEWS = {
    PNG: UploadPreview(
        thumbnail_url=f"/user_uploads/thumbnail/{PNG}/840x560.webp",
        width=1024,
        height=768,
        content_type="image/png",
    ),
    GIF: UploadPreview(
        thumbnail_url=f"/user_uploads/thumbnail/{GIF}/840x560-anim.webp",
        width=64,
        height=64,
        content_type="image/gif",
        animated=True,
    ),
    TIFF: UploadPreview(
        thumbnail_url=f"/user_uploads/thumbnail/{TIFF}/840x560.webp",
        width=3000,
        height=2000,
        content_type="image/tiff",
        transcoded="4032x3024.webp",
    ),
}


def context(
    previews: Mapping[str, UploadPreview] | None, *, inline_image_preview: bool = True
) -> RenderContext:
    """A context with the previews its caller loaded (``RenderContext.upload_previews``)."""
    return RenderContext(
        realm_url=REALM_URL, inline_image_preview=inline_image_preview, upload_previews=previews
    )


def render(content: str, previews: Mapping[str, UploadPreview] | None = PREVIEWS) -> str:
    return render_markdown(content, context(previews)).html


def test_uploaded_image_names_its_thumbnail() -> None:
    result = render_markdown(f"[screenshot.png](/user_uploads/{PNG})", context(PREVIEWS))
    assert result.html == (
        f'<p><a href="/user_uploads/{PNG}">screenshot.png</a></p>\n'
        f'<div class="message_inline_image"><a href="/user_uploads/{PNG}" title="screenshot.png">'
        '<img data-original-content-type="image/png" data-original-dimensions="1024x768" '
        f'src="/user_uploads/thumbnail/{PNG}/840x560.webp"></a></div>'
    )
    assert result.has_image
    assert result.attachment_path_ids == [PNG]


def test_animated_image_is_marked_and_names_the_animated_thumbnail() -> None:
    assert render(f"look [party.gif](/user_uploads/{GIF})") == (
        f'<p>look <a href="/user_uploads/{GIF}">party.gif</a></p>\n'
        f'<div class="message_inline_image"><a href="/user_uploads/{GIF}" title="party.gif">'
        '<img data-animated="true" data-original-content-type="image/gif" '
        'data-original-dimensions="64x64" '
        f'src="/user_uploads/thumbnail/{GIF}/840x560-anim.webp"></a></div>'
    )


def test_type_browsers_cannot_show_names_its_transcoded_image() -> None:
    html = render(f"[scan.tiff](/user_uploads/{TIFF})")
    assert (
        '<img data-original-content-type="image/tiff" data-original-dimensions="3000x2000" '
        f'data-transcoded-image="4032x3024.webp" src="/user_uploads/thumbnail/{TIFF}/840x560.webp">'
    ) in html


def test_upload_without_an_image_row_gets_no_preview() -> None:
    # Whatever the name says: only an image row makes an upload an image (as in Zulip).
    for path in (TEXT, "2/aa/nothumbnailsxxxxxxxxxxxxx/photo.png"):
        result = render_markdown(f"[file](/user_uploads/{path})", context(PREVIEWS))
        assert result.html == f'<p><a href="/user_uploads/{path}">file</a></p>'
        assert not result.has_image


def test_several_uploads_and_repeats() -> None:
    html = render(
        f"[a](/user_uploads/{PNG}) [b](/user_uploads/{TEXT}) [c](/user_uploads/{GIF}) "
        f"[a again](/user_uploads/{PNG})"
    )
    previews = html.split("\n", 1)[1]
    assert previews.count('<div class="message_inline_image">') == 2
    assert previews.index(f"thumbnail/{PNG}/") < previews.index(f"thumbnail/{GIF}/")


def test_percent_encoded_upload_link_finds_its_preview() -> None:
    path = "2/ab/Ejq9uw2dRTTf8LbGYmFNJJD4/naïve.png"
    previews = {path: PREVIEWS[PNG]}
    html = render("[x](/user_uploads/2/ab/Ejq9uw2dRTTf8LbGYmFNJJD4/na%C3%AFve.png)", previews)
    assert 'data-original-dimensions="1024x768"' in html


def test_title_is_escaped() -> None:
    html = render(f'[a "b" & <c>](/user_uploads/{PNG})')
    assert 'title="a &quot;b&quot; &amp; &lt;c&gt;"' in html


def test_without_loaded_previews_uploads_are_previewed_by_name() -> None:
    # Zulip's rendering without database data: the file itself is the image.
    html = render(f"[pic](/user_uploads/{PNG}) [notes](/user_uploads/{TEXT})", None)
    assert html.endswith(
        f'<div class="message_inline_image"><a href="/user_uploads/{PNG}" title="pic">'
        f'<img src="/user_uploads/{PNG}"></a></div>'
    )
    assert html.count("message_inline_image") == 1
    assert upload_previews(RenderContext()) is None


def test_images_elsewhere_keep_zulip_8_links_and_realm_images_their_own() -> None:
    html = render("https://example.com/cat.jpg")
    assert html == (
        '<div class="message_inline_image"><a href="https://example.com/cat.jpg">'
        '<img data-src-fullsize="/thumbnail?url=https%3A%2F%2Fexample.com%2Fcat.jpg&amp;size=full" '
        'src="/thumbnail?url=https%3A%2F%2Fexample.com%2Fcat.jpg&amp;size=thumbnail"></a></div>'
    )
    own = render(f"{REALM_URL}/static/images/logo.png")
    assert f'<img src="{REALM_URL}/static/images/logo.png">' in own


def test_previews_off_and_quotes_get_none() -> None:
    off = render_markdown(
        f"[x](/user_uploads/{PNG})", context(PREVIEWS, inline_image_preview=False)
    )
    assert "message_inline_image" not in off.html
    assert "message_inline_image" not in render(f"> [x](/user_uploads/{PNG})")
