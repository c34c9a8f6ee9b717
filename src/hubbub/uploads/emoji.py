"""Custom emoji images: checking an upload and resizing it to the size clients show.

Zulip stores each custom emoji at 64x64 pixels. A still image is scaled (up or down) to
cover the square and cropped at its centre; an animated GIF, PNG or WebP keeps every
frame, scaled to fit inside the square and padded with transparency, plus a still PNG of
its first frame (cropped like a still image) that clients show when animation would
distract. The result is written in the format the upload declared, so the stored file's
extension always matches its bytes.

Pillow is imported inside the functions: an idle server never needs it, and its modules
would count against the idle memory budget.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hubbub.errors import ErrorCode, JsonableError

if TYPE_CHECKING:
    from PIL.Image import Image

EMOJI_SIZE = 64
# Zulip refuses images whose pixels, over all frames, exceed this (about a quarter of a
# gigabyte at three bytes a pixel): the bound on what decoding an upload may cost.
IMAGE_BOMB_TOTAL_PIXELS = 90_000_000

# The types an emoji may be uploaded as (Zulip's thumbnailable types that browsers also
# show inline), with the extension and Pillow format each is stored in.
EMOJI_TYPES: dict[str, tuple[str, str]] = {
    "image/png": (".png", "PNG"),
    "image/gif": (".gif", "GIF"),
    "image/jpeg": (".jpg", "JPEG"),
    "image/webp": (".webp", "WEBP"),
}
# The formats that can carry an animation; a multi-picture JPEG is shown as its first.
_ANIMATED_FORMATS = frozenset({"PNG", "GIF", "WEBP"})
# The decoders Pillow may try: only those of the accepted types, so no upload reaches a
# decoder of a format nobody asked for.
_DECODERS = ("PNG", "GIF", "JPEG", "WEBP")


class BadImageError(JsonableError):
    """Zulip's ``BadImageError``: an upload that cannot be read as an image."""

    code = ErrorCode.BAD_IMAGE


@dataclass(frozen=True)
class EmojiImage:
    """A resized emoji: the image in its stored format, and a still PNG when animated."""

    data: bytes
    extension: str
    content_type: str
    still: bytes | None = None

    @property
    def is_animated(self) -> bool:
        return self.still is not None


def emoji_content_type(declared: str | None, file_name: str) -> str:
    """The upload's type: the one its part declared, else the one its name suggests;
    ``BadImageError`` unless it is a type an emoji may have."""
    import mimetypes

    content_type = (declared or "").split(";")[0].strip().lower()
    if content_type in ("", "application/octet-stream"):
        content_type = mimetypes.guess_type(file_name)[0] or ""
    if content_type not in EMOJI_TYPES:
        raise BadImageError("Invalid image format")
    return content_type


def resize_emoji(data: bytes, content_type: str, size: int = EMOJI_SIZE) -> EmojiImage:
    """The emoji image of an upload of ``content_type`` (see ``emoji_content_type``), or
    ``BadImageError`` with Zulip's wording. CPU-bound: call it in a worker thread."""
    from PIL import Image as PILImage
    from PIL import ImageOps, ImageSequence

    extension, out_format = EMOJI_TYPES[content_type]
    try:
        with warnings.catch_warnings():
            # Pillow warns of large pictures; the pixel bound below decides instead.
            warnings.simplefilter("ignore", PILImage.DecompressionBombWarning)
            source = PILImage.open(io.BytesIO(data), formats=_DECODERS)
    except PILImage.DecompressionBombError:
        raise BadImageError("Image size exceeds limit.") from None
    except (OSError, ValueError, SyntaxError):
        raise BadImageError("Could not decode image; did you upload an image file?") from None
    with source:
        animated = source.format in _ANIMATED_FORMATS and getattr(source, "n_frames", 1) > 1
        frames = getattr(source, "n_frames", 1) if animated else 1
        if source.width * source.height * frames > IMAGE_BOMB_TOTAL_PIXELS:
            raise BadImageError("Image size exceeds limit.")
        try:
            # A copy of the first frame, turned upright as the camera meant it.
            still = _cover(ImageOps.exif_transpose(source), size)
            if not animated:
                return EmojiImage(_encode(still, out_format), extension, content_type)
            durations: list[int] = []
            resized: list[Image] = []
            for frame in ImageSequence.Iterator(source):
                durations.append(int(frame.info.get("duration", 100)))
                resized.append(_contain(frame, size))
            loop = int(source.info.get("loop", 0))
        except (OSError, ValueError, SyntaxError):
            raise BadImageError("Image is corrupted or truncated") from None
    return EmojiImage(
        _encode_animation(resized, durations, loop, out_format),
        extension,
        content_type,
        still=_encode(still, "PNG"),
    )


def _cover(image: Image, size: int) -> Image:
    """Scaled to cover ``size`` x ``size`` and cropped at the centre."""
    from PIL import Image as PILImage
    from PIL import ImageOps

    rgba = image.convert("RGBA")
    return ImageOps.fit(rgba, (size, size), PILImage.Resampling.LANCZOS, centering=(0.5, 0.5))


def _contain(frame: Image, size: int) -> Image:
    """Scaled to fit inside ``size`` x ``size``, centred on a transparent square."""
    from PIL import Image as PILImage

    rgba = frame.convert("RGBA")
    scale = size / max(rgba.width, rgba.height)
    width = max(1, round(rgba.width * scale))
    height = max(1, round(rgba.height * scale))
    scaled = rgba.resize((width, height), PILImage.Resampling.LANCZOS)
    square = PILImage.new("RGBA", (size, size), (0, 0, 0, 0))
    square.paste(scaled, ((size - width) // 2, (size - height) // 2))
    return square


def _encode(image: Image, out_format: str) -> bytes:
    out = io.BytesIO()
    if out_format == "JPEG":
        # JPEG has no transparency: flatten onto white, as a browser shows a JPEG.
        from PIL import Image as PILImage

        background = PILImage.new("RGB", image.size, (255, 255, 255))
        background.paste(image, mask=image.getchannel("A"))
        background.save(out, "JPEG", quality=90)
    else:
        image.save(out, out_format)
    return out.getvalue()


def _encode_animation(
    frames: list[Image], durations: list[int], loop: int, out_format: str
) -> bytes:
    out = io.BytesIO()
    options: dict[str, Any] = {"save_all": True, "append_images": frames[1:], "loop": loop}
    options["duration"] = durations
    if out_format == "GIF":
        # Frames are whole pictures, so each replaces the last (no leftovers behind
        # transparent pixels).
        options["disposal"] = 2
    if out_format == "WEBP":
        options["lossless"] = True
    frames[0].save(out, out_format, **options)
    return out.getvalue()
