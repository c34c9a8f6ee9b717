"""Uploaded files and the messages that link them.

A message (or scheduled message) is linked to every upload its content links to, as long
as its sender owns the upload or can already see it (Zulip's rule: nobody gains access to a
file by guessing its address). The owner hears of every change in an ``attachment`` event.

An uploaded image also has an ``image_attachment`` row (its size, frames and thumbnails,
``uploads.thumbnails``), created with the upload's record and deleted with it, and its
thumbnail files go when the original does.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa

from hubbub.db.tables import (
    attachment,
    attachment_message,
    image_attachment,
    scheduled_attachment,
)
from hubbub.errors import JsonableError
from hubbub.models import User
from hubbub.queries.attachments import (
    Attachment,
    can_read_attachment,
    get_attachment,
    get_attachment_dicts,
    get_attachments_by_path_ids,
    upload_space_used,
)
from hubbub.queries.image_attachments import get_image_attachments, thumbnail_metadata
from hubbub.transaction import Tx
from hubbub.uploads import UploadStorage, active_storage
from hubbub.uploads.paths import path_ids_in
from hubbub.uploads.thumbnails import ImageInfo, StoredThumbnail, delete_thumbnails


async def do_create_attachment(
    tx: Tx,
    owner: User,
    *,
    path_id: str,
    file_name: str,
    content_type: str | None,
    size: int,
    now: float,
    image: ImageInfo | None = None,
) -> Attachment:
    """Record an upload whose file is already stored, with what is known of it as an
    image (its thumbnails already stored too) when it is one."""
    new_id = (
        await tx.conn.execute(
            sa.insert(attachment)
            .values(
                realm_id=owner.realm_id,
                owner_id=owner.id,
                path_id=path_id,
                file_name=file_name,
                content_type=content_type,
                size=size,
                create_time=now,
            )
            .returning(attachment.c.id)
        )
    ).scalar_one()
    if image is not None:
        await tx.conn.execute(
            sa.insert(image_attachment).values(
                realm_id=owner.realm_id,
                path_id=path_id,
                original_width_px=image.width,
                original_height_px=image.height,
                frames=image.frames,
                content_type=image.content_type,
                thumbnail_metadata=thumbnail_metadata(image.thumbnails),
            )
        )
    created = await get_attachment(tx.conn, int(new_id))
    assert created is not None
    await _notify_changed(tx, owner.realm_id, [created], op="add")
    return created


async def _claimable(tx: Tx, sender: User, content: str, already: set[int]) -> list[Attachment]:
    """The uploads ``content`` links to that ``sender`` may link: those already linked,
    their own, and those they can read through another message."""
    found = await get_attachments_by_path_ids(tx.conn, sender.realm_id, path_ids_in(content))
    return [a for a in found if a.id in already or await can_read_attachment(tx.conn, sender, a)]


async def do_update_message_attachments(
    tx: Tx, sender: User, message_id: int, content: str, *, new: bool = False
) -> None:
    """Link the message to the uploads its (new) content references; called when a message
    is sent (``new``: it has no links yet) and when its content is edited. Links an edit
    removes are dropped, but the upload stays (as in Zulip); it is cleaned up later if
    nothing links it any more."""
    current = (
        set()
        if new
        else {
            int(a)
            for (a,) in await tx.conn.execute(
                sa.select(attachment_message.c.attachment_id).where(
                    attachment_message.c.message_id == message_id
                )
            )
        }
    )
    wanted = await _claimable(tx, sender, content, current)
    added = [a for a in wanted if a.id not in current]
    removed = current - {a.id for a in wanted}
    if added:
        await tx.conn.execute(
            sa.insert(attachment_message),
            [{"attachment_id": a.id, "message_id": message_id} for a in added],
        )
    if removed:
        await tx.conn.execute(
            sa.delete(attachment_message).where(
                attachment_message.c.message_id == message_id,
                attachment_message.c.attachment_id.in_(removed),
            )
        )
    changed = added + await _load(tx, removed)
    await _notify_changed(tx, sender.realm_id, changed, op="update")


async def do_release_message_attachments(tx: Tx, message_ids: list[int]) -> None:
    """The messages are about to be deleted: drop their links, and delete the attachments
    no other message refers to."""
    if not message_ids:
        return
    affected = {
        int(a)
        for (a,) in await tx.conn.execute(
            sa.select(attachment_message.c.attachment_id)
            .distinct()
            .where(attachment_message.c.message_id.in_(message_ids))
        )
    }
    if not affected:
        return
    await tx.conn.execute(
        sa.delete(attachment_message).where(attachment_message.c.message_id.in_(message_ids))
    )
    still_linked = {
        int(a)
        for (a,) in await tx.conn.execute(
            sa.select(attachment_message.c.attachment_id)
            .where(attachment_message.c.attachment_id.in_(affected))
            .union(
                sa.select(scheduled_attachment.c.attachment_id).where(
                    scheduled_attachment.c.attachment_id.in_(affected)
                )
            )
        )
    }
    attachments = await _load(tx, affected)
    await do_delete_attachments(tx, [a for a in attachments if a.id not in still_linked])
    kept = [a for a in attachments if a.id in still_linked]
    if kept:
        await _notify_changed(tx, kept[0].realm_id, kept, op="update")


async def do_update_scheduled_message_attachments(
    tx: Tx, sender: User, scheduled_message_id: int, content: str
) -> None:
    """Link a scheduled message to the uploads its content references (on create and on
    edit). Attachment objects list sent messages only, so no event is sent."""
    current = {
        int(a)
        for (a,) in await tx.conn.execute(
            sa.select(scheduled_attachment.c.attachment_id).where(
                scheduled_attachment.c.scheduled_id == scheduled_message_id
            )
        )
    }
    wanted = {a.id for a in await _claimable(tx, sender, content, current)}
    if wanted - current:
        await tx.conn.execute(
            sa.insert(scheduled_attachment),
            [
                {"attachment_id": a, "scheduled_id": scheduled_message_id}
                for a in sorted(wanted - current)
            ],
        )
    if current - wanted:
        await tx.conn.execute(
            sa.delete(scheduled_attachment).where(
                scheduled_attachment.c.scheduled_id == scheduled_message_id,
                scheduled_attachment.c.attachment_id.in_(current - wanted),
            )
        )


async def check_delete_attachment(tx: Tx, user: User, attachment_id: int) -> None:
    """Delete one of ``user``'s uploads (even one that messages link to: their links break,
    as in Zulip)."""
    target = await get_attachment(tx.conn, attachment_id)
    if target is None or target.owner_id != user.id:
        raise JsonableError("Invalid attachment")
    await do_delete_attachments(tx, [target])


async def do_delete_attachments(
    tx: Tx, doomed: list[Attachment], *, storage: UploadStorage | None = None
) -> None:
    """Delete the records now (their links go by the foreign keys' cascade) and the files
    once the transaction has committed: a rollback must not leave a record without its
    file."""
    if not doomed:
        return
    ids = [a.id for a in doomed]
    await tx.conn.execute(
        sa.delete(attachment_message).where(attachment_message.c.attachment_id.in_(ids))
    )
    await tx.conn.execute(
        sa.delete(scheduled_attachment).where(scheduled_attachment.c.attachment_id.in_(ids))
    )
    await tx.conn.execute(sa.delete(attachment).where(attachment.c.id.in_(ids)))
    path_ids = [a.path_id for a in doomed]
    thumbnails: dict[str, tuple[StoredThumbnail, ...]] = {
        image.path_id: image.info.thumbnails
        for image in await get_image_attachments(tx.conn, path_ids)
    }
    if thumbnails:
        await tx.conn.execute(
            sa.delete(image_attachment).where(image_attachment.c.path_id.in_(list(thumbnails)))
        )
    storage = storage or active_storage()

    async def remove_files() -> None:
        for path_id in path_ids:
            await storage.delete(path_id)
            await delete_thumbnails(storage, path_id, thumbnails.get(path_id, ()))

    tx.on_commit(remove_files)
    by_realm: dict[int, list[Attachment]] = {}
    for a in doomed:
        by_realm.setdefault(a.realm_id, []).append(a)
    for realm_id, items in by_realm.items():
        used = await upload_space_used(tx.conn, realm_id)
        for a in items:
            event = {
                "type": "attachment",
                "op": "remove",
                "attachment": {"id": a.id},
                "upload_space_used": used,
            }
            tx.notify(realm_id, event, [a.owner_id])


async def do_record_thumbnails(tx: Tx, path_id: str, image: ImageInfo) -> None:
    """Thumbnails made after the upload (a format it lacked) join its row."""
    await tx.conn.execute(
        sa.update(image_attachment)
        .where(image_attachment.c.path_id == path_id)
        .values(thumbnail_metadata=thumbnail_metadata(image.thumbnails))
    )


async def _load(tx: Tx, ids: Iterable[int]) -> list[Attachment]:
    found = [await get_attachment(tx.conn, i) for i in sorted(ids)]
    return [a for a in found if a is not None]


async def _notify_changed(tx: Tx, realm_id: int, changed: list[Attachment], *, op: str) -> None:
    """``attachment`` ``add``/``update`` events, each to the upload's owner."""
    if not changed:
        return
    used = await upload_space_used(tx.conn, realm_id)
    for item, a in zip(await get_attachment_dicts(tx.conn, changed), changed, strict=True):
        event = {"type": "attachment", "op": op, "attachment": item, "upload_space_used": used}
        tx.notify(realm_id, event, [a.owner_id])
