"""Images and uploads of custom emoji in tests (shared by the API, event, Markdown and
reaction tests)."""

from __future__ import annotations

import io
import struct
import zlib
from typing import Any

import httpx
from PIL import Image

from tests.helpers import TestEnv, assert_success


def png_bytes(
    width: int = 100, height: int = 100, color: tuple[int, ...] = (200, 0, 0, 255)
) -> bytes:
    out = io.BytesIO()
    Image.new("RGBA", (width, height), color).save(out, "PNG")
    return out.getvalue()


def huge_png_header(width: int, height: int) -> bytes:
    """The start of a PNG claiming ``width`` x ``height`` pixels, without the pixels: a
    decoder that reads it before checking the size would have to allocate them all."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


def gif_bytes(width: int = 120, height: int = 60, frames: int = 3) -> bytes:
    """An animated GIF of ``frames`` frames, each another colour."""
    colors = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0)]
    images = [Image.new("RGB", (width, height), colors[i % 4]) for i in range(frames)]
    out = io.BytesIO()
    images[0].save(out, "GIF", save_all=True, append_images=images[1:], duration=80, loop=0)
    return out.getvalue()


async def post_emoji(
    env: TestEnv,
    user: str,
    name: str,
    content: bytes | None = None,
    file_name: str = "emoji.png",
    content_type: str | None = "image/png",
    *,
    files: dict[str, Any] | None = None,
) -> httpx.Response:
    """``POST /realm/emoji/{name}`` with one file (the field named after the file's path,
    as the official client names it), or with ``files`` as given."""
    if files is None:
        part: tuple[Any, ...] = (file_name, content if content is not None else png_bytes())
        if content_type is not None:
            part = (*part, content_type)
        files = {f"/home/me/{file_name}": part}
    return await env.client(user).request("POST", f"/realm/emoji/{name}", files=files)


async def add_emoji(
    env: TestEnv, user: str, name: str, content: bytes | None = None
) -> dict[str, Any]:
    """Upload a PNG emoji; its object as ``GET /realm/emoji`` shows it."""
    assert_success(await post_emoji(env, user, name, content))
    return await emoji_named(env, name)


async def emoji_named(env: TestEnv, name: str, *, active: bool = True) -> dict[str, Any]:
    listed = assert_success(await env.client("hamlet").get("/realm/emoji"))["emoji"]
    found = [e for e in listed.values() if e["name"] == name and e["deactivated"] != active]
    assert len(found) == 1, listed
    return found[0]  # type: ignore[no-any-return]
