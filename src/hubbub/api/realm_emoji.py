"""``/realm/emoji``: a realm's custom emoji. Anyone may list them (deactivated ones
too); uploading follows the realm's setting, deactivating is for administrators and each
emoji's author. The images are served by ``api/emoji_files.py``."""

from __future__ import annotations

import asyncio
import io

from starlette.datastructures import UploadFile

from hubbub.actions.realm_emoji import (
    MAX_EMOJI_FILE_SIZE_MIB,
    check_add_emoji_permission,
    check_may_override,
    check_remove_realm_emoji,
    do_add_realm_emoji,
    new_emoji_file_name,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint
from hubbub.api.params import PathStr
from hubbub.errors import JsonableError
from hubbub.queries.realm_emoji import emoji_path_id, realm_emoji_dicts
from hubbub.uploads import active_storage
from hubbub.uploads.emoji import EmojiImage, emoji_content_type, resize_emoji
from hubbub.uploads.storage import UploadStorage

MIB = 1024 * 1024


@endpoint("GET", "/realm/emoji")
async def list_emoji(req: ApiRequest) -> Payload:
    """Get all custom emoji"""
    async with req.services.db.read() as conn:
        return {"emoji": await realm_emoji_dicts(conn, req.my_realm.id)}


@endpoint("POST", "/realm/emoji/{emoji_name:path}")
async def upload_emoji(req: ApiRequest, *, emoji_name: PathStr) -> Payload:
    """Upload custom emoji"""
    me, realm = req.me, req.my_realm
    async with req.services.db.read() as conn:
        name = await check_add_emoji_permission(
            conn, me, realm, emoji_name, now=req.services.clock.now()
        )
    # Any field holding a file is the upload (the official client names the field after
    # the file's path). The form was parsed (and cached) by the dispatcher.
    form = await req.http.form()
    files = [value for _, value in form.multi_items() if isinstance(value, UploadFile)]
    if len(files) != 1:
        raise JsonableError("You must upload exactly one file.")
    check_may_override(me, name)
    upload = files[0]
    if upload.size is None or upload.size > MAX_EMOJI_FILE_SIZE_MIB * MIB:
        raise JsonableError(
            f"Uploaded file is larger than the allowed limit of {MAX_EMOJI_FILE_SIZE_MIB} MiB"
        )
    content_type = emoji_content_type(upload.content_type, upload.filename or "")
    await upload.seek(0)
    data = await upload.read()
    image = await asyncio.to_thread(resize_emoji, data, content_type)
    storage = active_storage()
    file_name = new_emoji_file_name(image.extension)
    stored = await _store(storage, realm.id, file_name, image)
    try:
        async with req.services.write() as tx:
            await do_add_realm_emoji(tx, me, name, file_name, is_animated=image.is_animated)
    except BaseException:
        for path_id in stored:
            await storage.delete(path_id)
        raise
    return {}


async def _store(
    storage: UploadStorage, realm_id: int, file_name: str, image: EmojiImage
) -> list[str]:
    """Write the image (and its still) before the row that names them; their path ids."""
    stored: list[str] = []
    try:
        path_id = emoji_path_id(realm_id, file_name)
        await storage.save(path_id, io.BytesIO(image.data))
        stored.append(path_id)
        if image.still is not None:
            still_id = emoji_path_id(realm_id, file_name, still=True)
            await storage.save(still_id, io.BytesIO(image.still))
            stored.append(still_id)
    except BaseException:
        for written in stored:
            await storage.delete(written)
        raise
    return stored


@endpoint("DELETE", "/realm/emoji/{emoji_name:path}")
async def delete_emoji(req: ApiRequest, *, emoji_name: PathStr) -> Payload:
    """Deactivate custom emoji"""
    async with req.services.write() as tx:
        await check_remove_realm_emoji(tx, req.me, emoji_name)
    return {}
