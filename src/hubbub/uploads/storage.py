"""Where uploaded files live, behind one small interface.

``LocalStorage`` keeps them under ``<data dir>/uploads``; an S3-compatible store only needs
to implement ``UploadStorage``, and ``storage_for`` to choose it.

A file is stored under a key: its path id, or, for one of an image's thumbnails,
``thumbnail/<path id>/<format name>`` (``thumbnail_key``; the layout Zulip's storage
uses). Path ids begin with the realm's number, so the two kinds never collide.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO, Protocol

from hubbub.settings import Settings
from hubbub.uploads.paths import check_path_id

CHUNK_SIZE = 64 * 1024
THUMBNAIL_PREFIX = "thumbnail/"


def thumbnail_key(path_id: str, format_name: str) -> str:
    """The key one of an upload's thumbnails is stored under."""
    return check_storage_key(f"{THUMBNAIL_PREFIX}{path_id}/{format_name}")


def check_storage_key(key: str) -> str:
    """``key`` if it is a well-formed path id or thumbnail key, else ValueError. A
    thumbnail key is a path id with one more segment (the format name) after the prefix,
    so the path id rules cover it."""
    check_path_id(key.removeprefix(THUMBNAIL_PREFIX))
    return key


class UploadStorage(Protocol):
    """Files by key (a path id or a ``thumbnail_key``)."""

    async def save(self, path_id: str, source: BinaryIO) -> int:
        """Store the bytes read from ``source`` under ``path_id``; how many there were."""
        ...

    def open(self, path_id: str) -> AsyncIterator[bytes]:
        """The file's bytes, in chunks (FileNotFoundError when it is missing)."""
        ...

    async def delete(self, path_id: str) -> None:
        """Remove the file; a file that is already gone is not an error."""
        ...

    async def size(self, path_id: str) -> int | None:
        """The file's size in bytes, or None when there is no such file."""
        ...


class LocalStorage:
    """Files under ``root``, at ``root/<path_id>``."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def _path(self, path_id: str) -> Path:
        # check_storage_key already refuses "..", absolute paths and odd characters; the
        # resolved path is checked too, so a symlink cannot lead outside the root.
        path = (self.root / check_storage_key(path_id)).resolve()
        if not path.is_relative_to(self.root):
            raise ValueError(f"path id outside the upload root: {path_id!r}")
        return path

    async def save(self, path_id: str, source: BinaryIO) -> int:
        path = self._path(path_id)
        return await asyncio.to_thread(_write, path, source)

    async def open(self, path_id: str) -> AsyncIterator[bytes]:
        path = self._path(path_id)
        handle = await asyncio.to_thread(path.open, "rb")
        try:
            while chunk := await asyncio.to_thread(handle.read, CHUNK_SIZE):
                yield chunk
        finally:
            handle.close()

    async def delete(self, path_id: str) -> None:
        path = self._path(path_id)
        await asyncio.to_thread(path.unlink, missing_ok=True)

    async def size(self, path_id: str) -> int | None:
        path = self._path(path_id)
        try:
            return (await asyncio.to_thread(path.stat)).st_size
        except FileNotFoundError:
            return None


def _write(path: Path, source: BinaryIO) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written under a temporary name and renamed, so a reader never sees half a file.
    partial = path.with_name(path.name + ".partial")
    size = 0
    try:
        with partial.open("wb") as out:
            while chunk := source.read(CHUNK_SIZE):
                out.write(chunk)
                size += len(chunk)
        os.replace(partial, path)
    except BaseException:
        # A full disk (or any failure) leaves no half-written file behind.
        partial.unlink(missing_ok=True)
        raise
    return size


def storage_for(settings: Settings) -> UploadStorage:
    return LocalStorage(settings.data_dir / "uploads")


# The storage of this process's server. Actions reach files through it because the hooks
# they are called from (sending, deleting) carry a transaction, not the services.
_active: UploadStorage | None = None


def configure_uploads(settings: Settings) -> UploadStorage:
    global _active
    _active = storage_for(settings)
    return _active


def active_storage() -> UploadStorage:
    if _active is None:
        raise RuntimeError("uploads are not configured (configure_uploads was not called)")
    return _active
