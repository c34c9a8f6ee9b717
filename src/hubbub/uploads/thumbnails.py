"""Thumbnails of uploaded images: the formats made, making them with Pillow, storing them.

Zulip 9.0 brought thumbnailing back (feature levels 273-276) and 10.0 refined it (feature
level 336): every uploaded image that decodes gets an ``image_attachment`` row (its size
as shown after any EXIF rotation, its frame count, its type) and a still 840x560 WebP,
plus an animated one when it has several frames, and, for a type browsers cannot show
(TIFF, AVIF), a large still WebP that clients may show in its place. Message HTML names
the default thumbnail at ``/user_uploads/thumbnail/<path id>/<format>``.

Zulip makes the thumbnails in a background worker and edits the messages that were sent
in the meantime. hubbub makes them while the upload request runs, before any message can
link the file, so a message always names a thumbnail that exists and never shows Zulip's
loading placeholder.

Pillow is imported inside the functions that decode: an idle server never needs it, and
its modules would count against the idle memory budget. Decoding runs in a worker thread,
one image at a time per process, and an image with more pixels than Zulip accepts is
left without thumbnails (the upload itself still succeeds, as in Zulip).
"""

from __future__ import annotations

import asyncio
import io
import logging
import re
import tempfile
import threading
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from hubbub.uploads.paths import is_inline_type
from hubbub.uploads.storage import CHUNK_SIZE, UploadStorage, thumbnail_key

if TYPE_CHECKING:
    from PIL.Image import Image

logger = logging.getLogger("hubbub.uploads.thumbnails")

# Zulip's limits: about a quarter of a gigabyte of 24-bit pixels for a still image, and a
# third of that for the first three frames of an animation.
IMAGE_BOMB_TOTAL_PIXELS = 90_000_000
IMAGE_MAX_ANIMATED_PIXELS = IMAGE_BOMB_TOTAL_PIXELS // 3

# Decoding one large image takes hundreds of megabytes; a process decodes one at a time.
_DECODE_SLOTS = threading.BoundedSemaphore(1)

_FORMAT_NAME_RE = re.compile(r"^(\d+)x(\d+)(-anim)?\.(\w+)$")
_CONTENT_TYPES = {"webp": "image/webp", "jpg": "image/jpeg", "png": "image/png", "gif": "image/gif"}
_PILLOW_FORMATS = {"webp": "WEBP", "jpg": "JPEG", "png": "PNG", "gif": "GIF"}


@dataclass(frozen=True)
class ThumbnailFormat:
    """A size box and an encoding; its ``name`` is the last segment of a thumbnail URL."""

    extension: str
    max_width: int
    max_height: int
    animated: bool

    @property
    def name(self) -> str:
        anim = "-anim" if self.animated else ""
        return f"{self.max_width}x{self.max_height}{anim}.{self.extension}"

    @property
    def content_type(self) -> str:
        return _CONTENT_TYPES.get(self.extension, "application/octet-stream")

    @classmethod
    def parse(cls, name: str) -> ThumbnailFormat | None:
        m = _FORMAT_NAME_RE.match(name)
        if m is None:
            return None
        return cls(m.group(4), int(m.group(1)), int(m.group(2)), m.group(3) is not None)

    def api_dict(self) -> dict[str, Any]:
        """The format as ``server_thumbnail_formats`` lists it (feature level 273)."""
        return {
            "name": self.name,
            "max_width": self.max_width,
            "max_height": self.max_height,
            "format": self.extension,
            "animated": self.animated,
        }


# Zulip 10.2's THUMBNAIL_OUTPUT_FORMATS, in its order: the first animated and the first
# still format are the ones message HTML names.
THUMBNAIL_OUTPUT_FORMATS = (
    ThumbnailFormat("webp", 840, 560, animated=True),
    ThumbnailFormat("webp", 840, 560, animated=False),
)
# Made as well for a type browsers do not show inline (feature level 336); portrait
# images get the box turned on its side.
TRANSCODED_IMAGE_FORMAT = ThumbnailFormat("webp", 4032, 3024, animated=False)

# Zulip's THUMBNAIL_ACCEPT_IMAGE_TYPES that Pillow decodes, with the decoders each may
# use: an upload only ever reaches the decoder of a type that is accepted (HEIC and SVG,
# which Zulip also accepts, need libraries hubbub does not ship).
_DECODERS = {
    "image/gif": ("GIF",),
    "image/jpeg": ("JPEG", "MPO"),
    "image/png": ("PNG",),
    "image/tiff": ("TIFF",),
    "image/webp": ("WEBP",),
    "image/avif": ("AVIF",),
}
# The decoders whose images may have several frames that play as an animation (a TIFF's
# pages and an MPO's pictures are not one).
_ANIMATED_DECODERS = frozenset({"GIF", "PNG", "WEBP", "AVIF"})
# EXIF orientations that turn the picture on its side (width and height swap).
_SIDEWAYS = frozenset({5, 6, 7, 8})
_EXIF_ORIENTATION = 0x0112


@dataclass(frozen=True)
class StoredThumbnail:
    """A thumbnail that was made: its format and what came out (Zulip's
    ``StoredThumbnailFormat``, stored as JSON in ``image_attachment.thumbnail_metadata``)."""

    format: ThumbnailFormat
    content_type: str
    width: int
    height: int
    byte_size: int

    def to_json(self) -> dict[str, Any]:
        return {
            "extension": self.format.extension,
            "max_width": self.format.max_width,
            "max_height": self.format.max_height,
            "animated": self.format.animated,
            "content_type": self.content_type,
            "width": self.width,
            "height": self.height,
            "byte_size": self.byte_size,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StoredThumbnail:
        fmt = ThumbnailFormat(
            str(data["extension"]),
            int(data["max_width"]),
            int(data["max_height"]),
            bool(data["animated"]),
        )
        return cls(
            fmt,
            str(data["content_type"]),
            int(data["width"]),
            int(data["height"]),
            int(data["byte_size"]),
        )


@dataclass(frozen=True)
class ImageInfo:
    """What ``image_attachment`` records of an uploaded image."""

    width: int
    height: int
    frames: int
    content_type: str | None
    thumbnails: tuple[StoredThumbnail, ...] = ()

    @property
    def animated(self) -> bool:
        return self.frames > 1

    def rendered(self, name: str) -> StoredThumbnail | None:
        return next((t for t in self.thumbnails if t.format.name == name), None)


def server_thumbnail_formats() -> list[dict[str, Any]]:
    """``server_thumbnail_formats`` of ``/register`` (feature level 273)."""
    return [fmt.api_dict() for fmt in THUMBNAIL_OUTPUT_FORMATS]


def accepts(content_type: str | None) -> bool:
    """Whether an upload of this type is decoded at all (its bytes are never looked at
    otherwise, as in Zulip)."""
    return content_type is not None and _decoder_names(content_type) != ()


def _decoder_names(content_type: str) -> tuple[str, ...]:
    key = content_type.split(";")[0].strip().lower()
    if key == "image/avif" and not _pillow_has("avif"):
        return ()
    return _DECODERS.get(key, ())


def _pillow_has(feature: str) -> bool:
    from PIL import features

    return bool(features.check(feature))


def wanted_formats(
    width: int, height: int, frames: int, content_type: str | None
) -> list[ThumbnailFormat]:
    """The formats an image gets: the output formats (the still ones only, for a still
    image), plus the transcoded one for a type browsers do not show inline."""
    formats = [f for f in THUMBNAIL_OUTPUT_FORMATS if frames > 1 or not f.animated]
    if content_type is not None and not is_inline_type(content_type):
        big = TRANSCODED_IMAGE_FORMAT
        if width < height:
            big = ThumbnailFormat(big.extension, big.max_height, big.max_width, big.animated)
        formats.append(big)
    return formats


def default_format(info: ImageInfo) -> ThumbnailFormat:
    """The format message HTML names: the first output format that is animated exactly
    when the image is."""
    for fmt in THUMBNAIL_OUTPUT_FORMATS:
        if fmt.animated == info.animated:
            return fmt
    return THUMBNAIL_OUTPUT_FORMATS[0]


def transcoded_thumbnail(info: ImageInfo) -> StoredThumbnail | None:
    """For a type browsers do not show inline, the largest thumbnail made (what
    ``data-transcoded-image`` names, feature level 336); None for the other types."""
    if info.content_type is None or is_inline_type(info.content_type) or not info.thumbnails:
        return None
    return sorted(info.thumbnails, key=lambda t: t.width * t.height)[-1]


# --- choosing what to serve ---------------------------------------------------------------


def _accepted_quality(accept: str, content_type: str) -> float | None:
    """The quality the Accept header gives ``content_type`` (None: not accepted)."""
    major = content_type.split("/")[0]
    best: tuple[int, float] | None = None
    for part in accept.split(","):
        media, _, params = part.strip().partition(";")
        media = media.strip().lower()
        if media == content_type:
            rank = 3
        elif media == f"{major}/*":
            rank = 2
        elif media == "*/*":
            rank = 1
        else:
            continue
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if best is None or rank > best[0]:
            best = (rank, quality)
    if best is None or best[1] <= 0:
        return None
    return best[1]


def closest_thumbnail(
    requested: ThumbnailFormat, rendered: Sequence[StoredThumbnail], accept: str
) -> StoredThumbnail:
    """What Zulip serves for a format it does not make: a thumbnail that is animated
    as asked, then in the asked encoding, then of a type the client accepts, nearest in
    width, smallest in bytes."""

    def grade(t: StoredThumbnail) -> tuple[bool, bool, float, int, int]:
        quality = _accepted_quality(accept, t.content_type) if accept else None
        return (
            t.format.animated != requested.animated,
            t.format.extension != requested.extension,
            0.0 if quality is None else -quality,
            abs(requested.max_width - t.format.max_width),
            t.byte_size,
        )

    return min(rendered, key=grade)


@dataclass(frozen=True)
class ThumbnailChoice:
    """What a thumbnail request gets: a thumbnail that exists, or a format to make first."""

    thumbnail: StoredThumbnail | None = None
    missing: ThumbnailFormat | None = None


def choose_thumbnail(info: ImageInfo, name: str, accept: str) -> ThumbnailChoice | None:
    """Zulip's rules for ``GET /user_uploads/thumbnail/.../<name>``; None: not found."""
    requested = ThumbnailFormat.parse(name)
    if requested is None:
        return None
    current = [f for f in THUMBNAIL_OUTPUT_FORMATS if info.animated or not f.animated]
    made = info.rendered(requested.name)
    if requested not in current:
        if not info.thumbnails:
            return None
        # An older format that was made is still served (so is the transcoded one);
        # anything else gets the nearest thumbnail there is.
        return ThumbnailChoice(made or closest_thumbnail(requested, info.thumbnails, accept))
    if made is None:
        return ThumbnailChoice(missing=requested)
    return ThumbnailChoice(made)


# --- making thumbnails (in a worker thread) -------------------------------------------------


@dataclass(frozen=True)
class _Made:
    thumbnail: StoredThumbnail
    data: bytes


def _open(source: BinaryIO, decoders: tuple[str, ...]) -> Image:
    from PIL import Image as PILImage

    source.seek(0)
    with warnings.catch_warnings():
        # hubbub applies its own pixel limit (Zulip's) once the header is read.
        warnings.simplefilter("ignore", PILImage.DecompressionBombWarning)
        return PILImage.open(source, formats=list(decoders))


def _probe(image: Image) -> tuple[int, int, int]:
    """Width and height as shown (after EXIF rotation) and the frame count."""
    width, height = image.size
    try:
        orientation = image.getexif().get(_EXIF_ORIENTATION)
    except Exception:  # a damaged EXIF block: shown as stored
        orientation = None
    if orientation in _SIDEWAYS:
        width, height = height, width
    frames = int(getattr(image, "n_frames", 1)) if image.format in _ANIMATED_DECODERS else 1
    return width, height, max(frames, 1)


def _too_large(width: int, height: int, frames: int) -> bool:
    if frames == 1:
        return width * height > IMAGE_BOMB_TOTAL_PIXELS
    # An animation must allow at least three frames within the animated budget.
    return width * height * min(3, frames) > IMAGE_MAX_ANIMATED_PIXELS


def _displayable(image: Image) -> Image:
    """The image in a mode WebP stores: RGBA when it has transparency, else RGB."""
    if image.mode in ("RGB", "RGBA"):
        return image
    has_alpha = image.mode in ("LA", "PA", "La", "RGBa") or "transparency" in image.info
    return image.convert("RGBA" if has_alpha else "RGB")


def _encode(frames: list[Image], fmt: ThumbnailFormat, durations: list[int], loop: int) -> bytes:
    out = io.BytesIO()
    pillow_format = _PILLOW_FORMATS[fmt.extension]
    if len(frames) > 1:
        frames[0].save(
            out,
            pillow_format,
            save_all=True,
            append_images=frames[1:],
            duration=durations,
            loop=loop,
        )
    else:
        frames[0].save(out, pillow_format)
    return out.getvalue()


def _still(source: BinaryIO, decoders: tuple[str, ...], fmt: ThumbnailFormat) -> Image:
    """The first frame, scaled to fit the format's box (never enlarged) and turned
    upright. Scaling comes first, on a fresh decode, so that a JPEG is decoded at a
    reduced size; the box is turned too when EXIF turns the picture on its side."""
    from PIL import ImageOps
    from PIL.Image import Resampling

    image = _open(source, decoders)
    box = (fmt.max_width, fmt.max_height)
    try:
        sideways = image.getexif().get(_EXIF_ORIENTATION) in _SIDEWAYS
    except Exception:
        sideways = False
    if sideways:
        box = (box[1], box[0])
    image.thumbnail(box, Resampling.LANCZOS)
    upright = ImageOps.exif_transpose(image)
    return _displayable(upright)


def _animation(
    source: BinaryIO, decoders: tuple[str, ...], fmt: ThumbnailFormat, width: int, height: int
) -> tuple[list[Image], list[int], int]:
    """The frames scaled to fit the box, as many as the animated pixel budget allows."""
    from PIL import ImageSequence
    from PIL.Image import Resampling

    image = _open(source, decoders)
    budget = max(1, IMAGE_MAX_ANIMATED_PIXELS // max(1, width * height))
    frames: list[Image] = []
    durations: list[int] = []
    for index, frame in enumerate(ImageSequence.Iterator(image)):
        if index >= budget:
            break
        scaled = frame.convert("RGBA")
        scaled.thumbnail((fmt.max_width, fmt.max_height), Resampling.LANCZOS)
        frames.append(scaled)
        durations.append(int(frame.info.get("duration", 100) or 100))
    return frames, durations, int(image.info.get("loop", 0) or 0)


def _make(
    source: BinaryIO, content_type: str, only: Iterable[str] | None
) -> tuple[ImageInfo, list[_Made]] | None:
    """Decode the image and make its thumbnails (those named in ``only``, else all it
    gets); None when it does not decode or has too many pixels."""
    decoders = _decoder_names(content_type)
    if not decoders:
        return None
    with _DECODE_SLOTS:
        try:
            width, height, frames = _probe(_open(source, decoders))
            if _too_large(width, height, frames):
                logger.info(
                    "image of %dx%d, %d frames: too large to thumbnail", width, height, frames
                )
                return None
            formats = wanted_formats(width, height, frames, content_type)
            if only is not None:
                names = set(only)
                formats = [f for f in formats if f.name in names]
            made: list[_Made] = []
            for fmt in formats:
                if fmt.animated:
                    pictures, durations, loop = _animation(source, decoders, fmt, width, height)
                else:
                    pictures, durations, loop = [_still(source, decoders, fmt)], [], 0
                data = _encode(pictures, fmt, durations, loop)
                out_width, out_height = pictures[0].size
                stored = StoredThumbnail(fmt, fmt.content_type, out_width, out_height, len(data))
                made.append(_Made(stored, data))
        # Pillow's decoders raise many kinds of error on damaged or hostile input (OSError,
        # ValueError, SyntaxError, EOFError, struct.error, DecompressionBombError ...);
        # whichever it is, the file is simply not an image hubbub can show.
        except Exception as error:
            logger.info("could not thumbnail an upload of type %s: %r", content_type, error)
            return None
    info = ImageInfo(width, height, frames, content_type, tuple(m.thumbnail for m in made))
    return info, made


async def _save_all(storage: UploadStorage, path_id: str, made: list[_Made]) -> None:
    try:
        for item in made:
            await storage.save(
                thumbnail_key(path_id, item.thumbnail.format.name), io.BytesIO(item.data)
            )
    except BaseException:
        await delete_thumbnails(storage, path_id, [m.thumbnail for m in made])
        raise


async def create_thumbnails(
    storage: UploadStorage, path_id: str, source: BinaryIO, content_type: str | None
) -> ImageInfo | None:
    """Make and store the thumbnails of a new upload whose bytes ``source`` holds; what
    its ``image_attachment`` row records, or None when it gets no row (not an accepted
    type, not decodable, too large)."""
    if content_type is None or not accepts(content_type):
        return None
    result = await asyncio.to_thread(_make, source, content_type, None)
    if result is None:
        return None
    info, made = result
    await _save_all(storage, path_id, made)
    return info


async def make_missing_thumbnail(
    storage: UploadStorage, path_id: str, info: ImageInfo, fmt: ThumbnailFormat
) -> ImageInfo | None:
    """Make the current formats an image lacks (``fmt`` among them) from its stored
    original, as Zulip does when such a thumbnail is asked for; the row's new contents,
    or None when the original is gone or no longer decodes."""
    if info.content_type is None or not accepts(info.content_type):
        return None
    missing = {
        f.name
        for f in wanted_formats(info.width, info.height, info.frames, info.content_type)
        if info.rendered(f.name) is None
    }
    if fmt.name not in missing:
        return info
    with tempfile.SpooledTemporaryFile(max_size=8 * CHUNK_SIZE) as original:
        try:
            async for chunk in storage.open(path_id):
                original.write(chunk)
        except FileNotFoundError:
            return None
        source = cast(BinaryIO, original)
        result = await asyncio.to_thread(_make, source, info.content_type, missing)
    if result is None:
        return None
    _, made = result
    await _save_all(storage, path_id, made)
    return ImageInfo(
        info.width,
        info.height,
        info.frames,
        info.content_type,
        info.thumbnails + tuple(m.thumbnail for m in made),
    )


async def delete_thumbnails(
    storage: UploadStorage, path_id: str, thumbnails: Iterable[StoredThumbnail]
) -> None:
    for thumbnail in thumbnails:
        await storage.delete(thumbnail_key(path_id, thumbnail.format.name))
