"""Unfinished resumable uploads (the tus protocol's server side, without HTTP).

An upload begun at ``/api/v1/tus`` (feature level 295) lives here until its last byte
arrives: its bytes in ``<root>/<id>``, what is known of it (owner, declared length,
offset, metadata, expiry) in ``<root>/<id>.info`` as JSON, the layout tusd uses. Files,
not a table, so that every worker process of one server sees the same uploads and an
upload costs no database write per chunk. Appends to one upload are serialized by an
exclusive ``flock`` on ``<root>/<id>.lock`` (a file never replaced, unlike the info,
which is rewritten by rename), so two requests racing with the same offset cannot both
succeed.

A finished upload's bytes move to the upload storage as a normal attachment (see
``api/tus.py``); its info stays, marked finished with the attachment's URL, so a client
asking for the offset after a lost response learns the upload is complete. Every upload
is forgotten once it expires.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

# How long an upload may stay unfinished (and a finished one be asked about).
UPLOAD_LIFETIME_SECONDS = 24 * 3600
# Expired uploads are looked for at most this often per process.
SWEEP_INTERVAL_SECONDS = 600.0
_ID_LENGTH = 24


class TusError(Exception):
    """A refusal, answered with ``status`` and a JSON ``{"message": ...}`` body (Zulip's
    form for its tus hooks' refusals)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class UploadInfo:
    id: str
    user_id: int
    realm_id: int
    length: int
    offset: int
    created: float
    expires: float
    # The client's Upload-Metadata, decoded (filename, filetype, ...).
    metadata: dict[str, str] = field(default_factory=dict)
    # The Upload-Metadata header as sent, returned by HEAD.
    raw_metadata: str = ""
    # Set once the upload became an attachment.
    url: str | None = None
    filename: str | None = None

    @property
    def finished(self) -> bool:
        return self.url is not None


def parse_metadata(header: str) -> dict[str, str]:
    """``Upload-Metadata``: comma-separated ``key base64(value)`` pairs (a key alone has
    an empty value). Values that are not base64 of UTF-8 text are refused."""
    metadata: dict[str, str] = {}
    for pair in header.split(","):
        pair = pair.strip()
        if not pair:
            continue
        key, _, encoded = pair.partition(" ")
        try:
            value = base64.b64decode(encoded.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise TusError(400, "Invalid Upload-Metadata header") from None
        metadata[key] = value
    return metadata


def is_valid_id(upload_id: str) -> bool:
    return len(upload_id) == _ID_LENGTH * 2 and all(c in "0123456789abcdef" for c in upload_id)


class TusStore:
    """The unfinished uploads under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._last_sweep = 0.0

    def _data(self, upload_id: str) -> Path:
        return self.root / upload_id

    def _info(self, upload_id: str) -> Path:
        return self.root / f"{upload_id}.info"

    def _lock(self, upload_id: str) -> Path:
        return self.root / f"{upload_id}.lock"

    def create(
        self,
        *,
        user_id: int,
        realm_id: int,
        length: int,
        metadata: dict[str, str],
        raw_metadata: str,
        now: float,
    ) -> UploadInfo:
        self.root.mkdir(parents=True, exist_ok=True)
        info = UploadInfo(
            id=secrets.token_hex(_ID_LENGTH),
            user_id=user_id,
            realm_id=realm_id,
            length=length,
            offset=0,
            created=now,
            expires=now + UPLOAD_LIFETIME_SECONDS,
            metadata=metadata,
            raw_metadata=raw_metadata,
        )
        self._data(info.id).touch()
        self._lock(info.id).touch()
        self._write_info(info)
        return info

    def _write_info(self, info: UploadInfo) -> None:
        path = self._info(info.id)
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(orjson.dumps(asdict(info)))
        os.replace(partial, path)

    def _read_info(self, upload_id: str) -> UploadInfo | None:
        try:
            raw: dict[str, Any] = orjson.loads(self._info(upload_id).read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            return None
        return UploadInfo(**raw)

    def get(self, upload_id: str, now: float) -> UploadInfo | None:
        """The upload, unless it does not exist or has expired."""
        if not is_valid_id(upload_id):
            return None
        info = self._read_info(upload_id)
        if info is None or info.expires <= now:
            return None
        return info

    def try_lock(self, upload_id: str) -> IO[bytes] | None:
        """The upload's lock, taken without waiting (close the handle to release it);
        None when no such upload exists. A lock held by another request is a 423, as
        tusd answers, rather than a wait that would hold a worker."""
        if not is_valid_id(upload_id):
            return None
        try:
            handle = self._lock(upload_id).open("rb")
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise TusError(423, "file currently locked") from None
        return handle

    def open_for_append(self, info: UploadInfo) -> IO[bytes]:
        """The upload's bytes, positioned at its offset (anything past it dropped: bytes
        the client was never told were received)."""
        out = self._data(info.id).open("r+b")
        out.seek(info.offset)
        out.truncate()
        return out

    def save_offset(self, info: UploadInfo, offset: int) -> None:
        info.offset = offset
        self._write_info(info)

    def data_path(self, info: UploadInfo) -> Path:
        return self._data(info.id)

    def mark_finished(self, info: UploadInfo, *, url: str, filename: str) -> None:
        """The bytes went to the upload storage: keep only the info, with the result."""
        info.url = url
        info.filename = filename
        self._write_info(info)
        self._data(info.id).unlink(missing_ok=True)

    def delete(self, info: UploadInfo) -> None:
        self._remove(info.id)

    def _remove(self, upload_id: str) -> None:
        self._data(upload_id).unlink(missing_ok=True)
        self._info(upload_id).unlink(missing_ok=True)
        self._lock(upload_id).unlink(missing_ok=True)

    def sweep(self, now: float, *, force: bool = False) -> int:
        """Forget expired uploads (at most once per ``SWEEP_INTERVAL_SECONDS`` unless
        forced); how many went."""
        if not force and now - self._last_sweep < SWEEP_INTERVAL_SECONDS:
            return 0
        self._last_sweep = now
        if not self.root.is_dir():
            return 0
        removed = 0
        for path in self.root.glob("*.info"):
            upload_id = path.name.removesuffix(".info")
            info = self._read_info(upload_id) if is_valid_id(upload_id) else None
            if info is not None and info.expires > now:
                continue
            if info is None and path.stat().st_mtime > time.time() - UPLOAD_LIFETIME_SECONDS:
                # Unreadable but recent: perhaps being written; left for a later sweep.
                continue
            self._remove(upload_id)
            removed += 1
        return removed
