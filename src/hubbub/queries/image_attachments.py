"""Reading ``image_attachment``: what is known of an uploaded image and its thumbnails,
and the previews message HTML shows for the uploads a message links."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import image_attachment
from hubbub.markdown.images import UploadPreview
from hubbub.uploads.paths import path_ids_in
from hubbub.uploads.thumbnails import (
    ImageInfo,
    StoredThumbnail,
    default_format,
    transcoded_thumbnail,
)


@dataclass(frozen=True)
class ImageAttachment:
    id: int
    realm_id: int
    path_id: str
    info: ImageInfo

    @classmethod
    def from_row(cls, row: Any) -> ImageAttachment:
        m = row._mapping
        stored = orjson.loads(m["thumbnail_metadata"] or "[]")
        info = ImageInfo(
            width=int(m["original_width_px"]),
            height=int(m["original_height_px"]),
            frames=int(m["frames"]),
            content_type=m["content_type"],
            thumbnails=tuple(StoredThumbnail.from_json(t) for t in stored),
        )
        return cls(int(m["id"]), int(m["realm_id"]), str(m["path_id"]), info)


def thumbnail_metadata(thumbnails: Iterable[StoredThumbnail]) -> str:
    """The JSON text of ``image_attachment.thumbnail_metadata``."""
    return orjson.dumps([t.to_json() for t in thumbnails]).decode()


async def get_image_attachment(conn: AsyncConnection, path_id: str) -> ImageAttachment | None:
    row = (
        await conn.execute(sa.select(image_attachment).where(image_attachment.c.path_id == path_id))
    ).first()
    return ImageAttachment.from_row(row) if row is not None else None


async def get_image_attachments(
    conn: AsyncConnection, path_ids: Iterable[str], *, realm_id: int | None = None
) -> list[ImageAttachment]:
    wanted = sorted(set(path_ids))
    if not wanted:
        return []
    query = sa.select(image_attachment).where(image_attachment.c.path_id.in_(wanted))
    if realm_id is not None:
        query = query.where(image_attachment.c.realm_id == realm_id)
    rows = await conn.execute(query.order_by(image_attachment.c.id))
    return [ImageAttachment.from_row(r) for r in rows]


def upload_preview(image: ImageAttachment) -> UploadPreview:
    info = image.info
    transcoded = transcoded_thumbnail(info)
    return UploadPreview(
        thumbnail_url=f"/user_uploads/thumbnail/{image.path_id}/{default_format(info).name}",
        width=info.width,
        height=info.height,
        content_type=info.content_type,
        animated=info.animated,
        transcoded=transcoded.format.name if transcoded is not None else None,
    )


async def get_upload_previews(
    conn: AsyncConnection, realm_id: int, content: str | None
) -> dict[str, UploadPreview] | None:
    """The previews of the realm's uploaded images that ``content`` links, by path id;
    None when there is no content to look in (the renderer then previews uploads by
    their file names). No query runs for content that links no upload. An image whose
    thumbnails could not be made is left out: it gets no preview."""
    if content is None:
        return None
    images = await get_image_attachments(conn, path_ids_in(content), realm_id=realm_id)
    return {image.path_id: upload_preview(image) for image in images if image.info.thumbnails}
