"""Image thumbnails: made when an image is uploaded (its ``image_attachment`` row and the
840x560 WebP formats), served at ``/user_uploads/thumbnail/<path id>/<format>`` to those
who may see the original, named by message HTML, listed in ``server_thumbnail_formats``,
deleted with their upload; and Zulip 8.0's ``/thumbnail`` links."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from urllib.parse import urlencode

import httpx
import pytest
import sqlalchemy as sa
from PIL import Image

from hubbub.clock import FakeClock
from hubbub.db.tables import image_attachment
from hubbub.queries.image_attachments import ImageAttachment, get_image_attachment
from hubbub.settings import Settings
from hubbub.uploads.thumbnails import IMAGE_BOMB_TOTAL_PIXELS
from hubbub.workers import upload_cleanup
from tests.helpers import TestEnv, assert_error, assert_success, basic_auth, running_env
from tests.messages_helpers import send_stream_message
from tests.uploads_helpers import fetch, upload

DAY = 86400.0


def png(width: int, height: int, mode: str = "RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, (width, height), "red" if mode == "RGB" else 1).save(out, "PNG")
    return out.getvalue()


def jpeg_on_its_side(width: int, height: int) -> bytes:
    """A JPEG whose EXIF turns it a quarter (orientation 6): shown ``height`` wide."""
    exif = Image.Exif()
    exif[0x0112] = 6
    out = io.BytesIO()
    Image.new("RGB", (width, height), "green").save(out, "JPEG", exif=exif)
    return out.getvalue()


def gif(frames: int, width: int = 1000, height: int = 500) -> bytes:
    pictures = [Image.new("RGB", (width, height), (i * 40, 200 - i * 40, 0)) for i in range(frames)]
    out = io.BytesIO()
    pictures[0].save(out, "GIF", save_all=True, append_images=pictures[1:], duration=80, loop=0)
    return out.getvalue()


def thumbnail_url(path_id: str, name: str) -> str:
    return f"/user_uploads/thumbnail/{path_id}/{name}"


def stored(env: TestEnv, key: str) -> bool:
    return (env.services.settings.data_dir / "uploads" / key).is_file()


async def image_row(env: TestEnv, path_id: str) -> ImageAttachment | None:
    async with env.services.db.read() as conn:
        return await get_image_attachment(conn, path_id)


def decoded(response: httpx.Response) -> Image.Image:
    return Image.open(io.BytesIO(response.content))


async def test_png_upload_gets_a_row_and_a_still_thumbnail(env: TestEnv) -> None:
    path_id = await upload(env, "hamlet", png(1024, 768), "chart.png", "image/png")
    row = await image_row(env, path_id)
    assert row is not None and row.realm_id == env.realm.id
    info = row.info
    assert (info.width, info.height, info.frames, info.content_type) == (
        1024,
        768,
        1,
        "image/png",
    )
    assert [(t.format.name, t.width, t.height) for t in info.thumbnails] == [
        ("840x560.webp", 747, 560)
    ]
    assert stored(env, f"thumbnail/{path_id}/840x560.webp")

    response = await fetch(env, thumbnail_url(path_id, "840x560.webp"), "hamlet")
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/webp"
    assert response.headers["content-disposition"] == 'inline; filename="840x560.webp"'
    assert int(response.headers["content-length"]) == info.thumbnails[0].byte_size
    assert (decoded(response).format, decoded(response).size) == ("WEBP", (747, 560))
    head = await fetch(env, thumbnail_url(path_id, "840x560.webp"), "hamlet", method="HEAD")
    assert head.status_code == 200 and head.content == b""
    # The original is unchanged.
    assert (await fetch(env, f"/user_uploads/{path_id}", "hamlet")).content == png(1024, 768)


async def test_jpeg_size_is_as_shown_after_exif_rotation(env: TestEnv) -> None:
    path_id = await upload(env, "hamlet", jpeg_on_its_side(1600, 900), "photo.jpg", "image/jpeg")
    row = await image_row(env, path_id)
    assert row is not None
    assert (row.info.width, row.info.height) == (900, 1600)
    response = await fetch(env, thumbnail_url(path_id, "840x560.webp"), "hamlet")
    assert decoded(response).size == (315, 560)


async def test_animated_gif_gets_animated_and_still_thumbnails(env: TestEnv) -> None:
    path_id = await upload(env, "hamlet", gif(5), "party.gif", "image/gif")
    row = await image_row(env, path_id)
    assert row is not None and row.info.frames == 5 and row.info.animated
    assert [t.format.name for t in row.info.thumbnails] == ["840x560-anim.webp", "840x560.webp"]
    animated = decoded(await fetch(env, thumbnail_url(path_id, "840x560-anim.webp"), "hamlet"))
    assert (animated.size, getattr(animated, "n_frames", 1)) == ((840, 420), 5)
    still = decoded(await fetch(env, thumbnail_url(path_id, "840x560.webp"), "hamlet"))
    assert (still.size, getattr(still, "n_frames", 1)) == ((840, 420), 1)


async def test_formats_not_made_get_the_nearest_or_are_not_found(env: TestEnv) -> None:
    path_id = await upload(env, "hamlet", png(100, 50), "small.png", "image/png")
    still = await fetch(env, thumbnail_url(path_id, "840x560.webp"), "hamlet")
    # A still image has no animated thumbnail, and no other size was made: both requests
    # get the still one (as in Zulip).
    for name in ("840x560-anim.webp", "300x200.jpg"):
        response = await fetch(env, thumbnail_url(path_id, name), "hamlet")
        assert response.status_code == 200, name
        assert response.content == still.content
    for name in ("840x560", "original.png", "840x560.webp.png"):
        response = await fetch(env, thumbnail_url(path_id, name), "hamlet")
        assert response.status_code == 404, name
        assert response.json()["msg"] == "File not found."


async def test_missing_current_format_is_made_when_asked_for(env: TestEnv) -> None:
    path_id = await upload(env, "hamlet", png(1200, 300), "wide.png", "image/png")
    # As for an image recorded before its thumbnails were made.
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(image_attachment)
            .where(image_attachment.c.path_id == path_id)
            .values(thumbnail_metadata="[]")
        )
    (env.services.settings.data_dir / "uploads" / f"thumbnail/{path_id}/840x560.webp").unlink()
    response = await fetch(env, thumbnail_url(path_id, "840x560.webp"), "hamlet")
    assert response.status_code == 200
    assert decoded(response).size == (840, 210)
    row = await image_row(env, path_id)
    assert row is not None and [t.format.name for t in row.info.thumbnails] == ["840x560.webp"]


async def test_non_images_and_undecodable_or_huge_images_get_no_thumbnails(env: TestEnv) -> None:
    text = await upload(env, "hamlet", b"hello", "notes.txt", "text/plain")
    broken = await upload(env, "hamlet", b"\x89PNG not really", "broken.png", "image/png")
    # A black-and-white PNG one pixel over the limit is small on disk.
    huge = await upload(
        env, "hamlet", png(10_000, IMAGE_BOMB_TOTAL_PIXELS // 10_000 + 1, "1"), "huge.png"
    )
    for path_id in (text, broken, huge):
        assert await image_row(env, path_id) is None, path_id
        response = await fetch(env, thumbnail_url(path_id, "840x560.webp"), "hamlet")
        assert response.status_code == 404, path_id
        assert not (env.services.settings.data_dir / "uploads" / f"thumbnail/{path_id}").exists()
        # The upload itself is whole.
        assert (await fetch(env, f"/user_uploads/{path_id}", "hamlet")).status_code == 200


async def test_thumbnail_access_follows_the_original(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    path_id = await upload(env, "hamlet", png(64, 64), "icon.png", "image/png")
    url = thumbnail_url(path_id, "840x560.webp")
    forbidden = await fetch(env, url, "othello")
    assert forbidden.status_code == 403
    assert forbidden.json()["msg"] == "You are not authorized to view this file."
    assert (await fetch(env, url)).status_code == 401
    await send_stream_message(env, "hamlet", "Denmark", f"[icon.png](/user_uploads/{path_id})")
    assert (await fetch(env, url, "othello")).status_code == 200
    assert (await fetch(env, url, "polonius")).status_code == 403
    assert (await fetch(env, url, api_key=env.users["othello"].api_key)).status_code == 200

    # Another organization's user sees nothing of it: on their own host there is no such
    # file, and on this one their credentials are for the wrong organization.
    zephyr = await env.create_realm("zephyr", "Zephyr")
    zoe = await env.create_user("zoe@example.com", "Zoe", realm=zephyr)
    elsewhere = await fetch(env, url, zoe, host="zephyr.localhost")
    assert (elsewhere.status_code, elsewhere.json()["msg"]) == (404, "File not found.")
    wrong_host = await fetch(env, url, zoe)
    assert wrong_host.status_code == 400 and wrong_host.json()["result"] == "error"
    # Nor can a path elsewhere in the realm's tree reach other files.
    realm_id = env.realm.id
    for bad in (
        f"/user_uploads/thumbnail/{realm_id}/%2e%2e/%2e%2e/hubbub.db/840x560.webp",
        f"/user_uploads/thumbnail/{realm_id + 1}/{path_id.split('/', 1)[1]}/840x560.webp",
    ):
        assert (await fetch(env, bad, "hamlet")).status_code == 404, bad


async def test_message_html_names_the_thumbnail(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    still = await upload(env, "hamlet", png(1024, 768), "chart.png", "image/png")
    moving = await upload(env, "hamlet", gif(3, 64, 64), "party.gif", "image/gif")
    text = await upload(env, "hamlet", b"hi", "notes.txt", "text/plain")
    content = (
        f"[chart.png](/user_uploads/{still}) [party.gif](/user_uploads/{moving}) "
        f"[notes.txt](/user_uploads/{text})"
    )
    message_id = await send_stream_message(env, "hamlet", "Denmark", content)
    body = assert_success(await env.client("hamlet").get(f"/messages/{message_id}"))
    html = body["message"]["content"]
    assert html.endswith(
        f'<div class="message_inline_image"><a href="/user_uploads/{still}" title="chart.png">'
        '<img data-original-content-type="image/png" data-original-dimensions="1024x768" '
        f'src="/user_uploads/thumbnail/{still}/840x560.webp"></a></div>'
        f'<div class="message_inline_image"><a href="/user_uploads/{moving}" title="party.gif">'
        '<img data-animated="true" data-original-content-type="image/gif" '
        'data-original-dimensions="64x64" '
        f'src="/user_uploads/thumbnail/{moving}/840x560-anim.webp"></a></div>'
    )
    # Every URL the preview names is served.
    for url in (f"/user_uploads/thumbnail/{still}/840x560.webp", f"/user_uploads/{still}"):
        assert (await fetch(env, url, "othello")).status_code == 200, url


async def test_register_lists_the_thumbnail_formats(env: TestEnv) -> None:
    client = env.client("hamlet")
    state = assert_success(await client.post("/register", {"fetch_event_types": ["realm"]}))
    assert state["server_thumbnail_formats"] == [
        {"name": "840x560-anim.webp", "max_width": 840, "max_height": 560, "format": "webp",
         "animated": True},
        {"name": "840x560.webp", "max_width": 840, "max_height": 560, "format": "webp",
         "animated": False},
    ]  # fmt: skip
    other = assert_success(await client.post("/register", {"fetch_event_types": ["message"]}))
    assert "server_thumbnail_formats" not in other


async def test_deleting_an_upload_deletes_its_thumbnails(env: TestEnv) -> None:
    path_id = await upload(env, "hamlet", gif(2, 80, 40), "blink.gif", "image/gif")
    keys = [f"thumbnail/{path_id}/840x560-anim.webp", f"thumbnail/{path_id}/840x560.webp"]
    assert all(stored(env, k) for k in keys)
    attachments = assert_success(await env.client("hamlet").get("/attachments"))["attachments"]
    (item,) = [a for a in attachments if a["path_id"] == path_id]
    assert_success(await env.client("hamlet").delete(f"/attachments/{item['id']}"))
    assert await image_row(env, path_id) is None
    assert not any(stored(env, k) for k in keys) and not stored(env, path_id)
    response = await fetch(env, thumbnail_url(path_id, "840x560.webp"), "hamlet")
    assert response.status_code == 404


@pytest.fixture
async def clock_env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings.with_(unclaimed_upload_days=3), clock=FakeClock()) as e:
        yield e


async def test_unclaimed_image_goes_with_its_thumbnails(clock_env: TestEnv) -> None:
    env = clock_env
    path_id = await upload(env, "hamlet", png(900, 900), "lost.png", "image/png")
    assert stored(env, f"thumbnail/{path_id}/840x560.webp")
    env.advance(4 * DAY)
    assert await upload_cleanup.run_once(env.services) == 1
    assert await image_row(env, path_id) is None
    assert not stored(env, path_id) and not stored(env, f"thumbnail/{path_id}/840x560.webp")


async def test_legacy_thumbnail_links(env: TestEnv) -> None:
    path_id = await upload(env, "hamlet", png(20, 10), "old.png", "image/png")
    for url in (f"user_uploads/{path_id}", f"/user_uploads/{path_id}"):
        response = await fetch(env, f"/thumbnail?url={url}&size=full", "hamlet")
        assert response.status_code == 200, url
        assert response.content == png(20, 10)
        assert (await fetch(env, f"/thumbnail?url={url}&size=full", "othello")).status_code == 403

    outside = "https://example.com/images/cat.png"
    response = await fetch(
        env, f"/thumbnail?url={outside.replace(':', '%3A')}&size=thumbnail", "othello"
    )
    assert (response.status_code, response.headers["location"]) == (302, outside)
    # Without credentials: only where spectators are let in (this realm does not).
    assert (await fetch(env, f"/thumbnail?url={outside}&size=full")).status_code == 401
    for url in ("javascript:alert(1)", "https://example.com/page.html", "ftp://x.org/a.png"):
        query = urlencode({"url": url, "size": "full"})
        refused = await fetch(env, f"/thumbnail?{query}", "othello")
        assert refused.status_code == 403, url
    assert_error(await fetch(env, "/thumbnail?size=full", "othello"), "Missing 'url' argument",
                 code="REQUEST_VARIABLE_MISSING")  # fmt: skip


async def test_thumbnail_for_a_browser_accept_header(env: TestEnv) -> None:
    """A browser's Accept header (which ranks WebP) changes nothing for a format made."""
    path_id = await upload(env, "hamlet", png(30, 30), "dot.png", "image/png")
    hamlet = env.users["hamlet"]
    transport = httpx.ASGITransport(app=env.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        response = await http.get(
            thumbnail_url(path_id, "840x560.webp"),
            headers={
                "Authorization": basic_auth(hamlet.delivery_email, hamlet.api_key),
                "Accept": "image/avif,image/webp,*/*;q=0.8",
            },
        )
    assert response.status_code == 200 and response.headers["content-type"] == "image/webp"
