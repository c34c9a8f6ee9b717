"""Resumable uploads at ``/api/v1/tus`` (feature level 295): the tus 1.0.0 protocol
(https://tus.io/protocols/resumable-upload), with the creation, creation-with-upload,
expiration and termination extensions.

Zulip serves this endpoint with tusd and two hooks; hubbub speaks the protocol itself
and keeps Zulip's rules from those hooks:
- every request but ``OPTIONS`` needs the user's credentials (HTTP Basic, as for the
  rest of the API); without them the answer is 401 "Unauthenticated upload";
- an upload must declare its length (``Upload-Defer-Length`` is a 411) and may not be
  larger than the server's upload limit (413, in the wording of ``POST /user_uploads``);
- the ``filename`` and ``filetype`` metadata name and type the file (an empty name
  becomes "uploaded-file"; without a type it is guessed from the name);
- the request that delivers the last byte makes the upload an attachment, as
  ``POST /user_uploads`` does, and answers 200 with ``{"url", "filename"}``.
Refusals have Zulip's body ``{"message": ...}``. Only the uploader may see or continue
an upload; another user's upload id is not found.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import IO, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from hubbub.actions.attachments import do_create_attachment
from hubbub.api.auth import authenticate_on_subdomain, parse_basic_auth
from hubbub.api.endpoint import request_subdomain
from hubbub.api.headers import header
from hubbub.errors import ApiError
from hubbub.models import User
from hubbub.services import Services
from hubbub.uploads import active_storage
from hubbub.uploads.paths import guess_content_type, new_path_id
from hubbub.uploads.thumbnails import ImageInfo, create_thumbnails, delete_thumbnails
from hubbub.uploads.tus import TusError, TusStore, UploadInfo, parse_metadata

TUS_VERSION = "1.0.0"
TUS_EXTENSIONS = "creation,creation-with-upload,expiration,termination"
OFFSET_CONTENT_TYPE = "application/offset+octet-stream"
MIB = 1024 * 1024
# Zulip's name for an upload whose metadata names no usable file.
FALLBACK_FILENAME = "uploaded-file"


# One store per data directory, so that its sweep timer is shared by the process.
_STORES: dict[Path, TusStore] = {}


def _store(services: Services) -> TusStore:
    root = services.settings.data_dir / "tus"
    store = _STORES.get(root)
    if store is None:
        store = _STORES[root] = TusStore(root)
    return store


def _limit_bytes(services: Services) -> int:
    return int(services.settings.max_file_upload_mib) * MIB


def _headers(**extra: str) -> dict[str, str]:
    return {"Tus-Resumable": TUS_VERSION, "Cache-Control": "no-store", **extra}


def _refusal(error: TusError) -> Response:
    headers = _headers()
    if error.status == 412:
        headers["Tus-Version"] = TUS_VERSION
    return JSONResponse({"message": error.message}, status_code=error.status, headers=headers)


def _http_date(timestamp: float) -> str:
    # email.utils is imported here, when an upload is made, not by every server at start.
    from email.utils import formatdate

    return formatdate(timestamp, usegmt=True)


async def _user(services: Services, request: Request) -> User:
    authorization = header(request.scope, b"authorization")
    if not authorization:
        raise TusError(401, "Unauthenticated upload")
    try:
        email, api_key = parse_basic_auth(authorization)
        async with services.db.read() as conn:
            user, _realm = await authenticate_on_subdomain(
                conn, request_subdomain(services, request), email, api_key
            )
    except ApiError:
        raise TusError(401, "Unauthenticated upload") from None
    return user


def _check_version(request: Request) -> None:
    if request.headers.get("tus-resumable") != TUS_VERSION:
        raise TusError(412, "unsupported version")


def _own_upload(store: TusStore, user: User, upload_id: str, now: float) -> UploadInfo:
    info = store.get(upload_id, now)
    if info is None or info.user_id != user.id or info.realm_id != user.realm_id:
        raise TusError(404, "upload not found")
    return info


def _offset_headers(info: UploadInfo) -> dict[str, str]:
    return _headers(
        **{
            "Upload-Offset": str(info.offset),
            "Upload-Expires": _http_date(info.expires),
        }
    )


async def tus_options(request: Request) -> Response:
    """What the server supports; no credentials needed (tus clients ask first)."""
    services: Services = request.app.state.services
    return Response(
        status_code=204,
        headers=_headers(
            **{
                "Tus-Version": TUS_VERSION,
                "Tus-Extension": TUS_EXTENSIONS,
                "Tus-Max-Size": str(_limit_bytes(services)),
            }
        ),
    )


def _declared_length(request: Request, services: Services) -> int:
    if "upload-defer-length" in request.headers:
        raise TusError(411, "SizeIsDeferred is not supported")
    raw = request.headers.get("upload-length")
    if raw is None or not raw.isdigit():
        raise TusError(400, "missing or invalid Upload-Length header")
    length = int(raw)
    if length > _limit_bytes(services):
        limit = services.settings.max_file_upload_mib
        raise TusError(413, f"Uploaded file is larger than the allowed limit of {limit} MiB")
    return length


async def tus_create(request: Request) -> Response:
    """``POST /api/v1/tus``: a new upload; with a body (creation-with-upload) its first
    bytes too."""
    services: Services = request.app.state.services
    try:
        _check_version(request)
        user = await _user(services, request)
        length = _declared_length(request, services)
        raw_metadata = request.headers.get("upload-metadata", "")
        metadata = parse_metadata(raw_metadata)
        store = _store(services)
        now = services.clock.now()
        await asyncio.to_thread(store.sweep, now)
        info = await asyncio.to_thread(
            store.create,
            user_id=user.id,
            realm_id=user.realm_id,
            length=length,
            metadata=metadata,
            raw_metadata=raw_metadata,
            now=now,
        )
        location = f"/api/v1/tus/{info.id}"
        result: dict[str, Any] | None = None
        has_body = request.headers.get("content-type", "").startswith(OFFSET_CONTENT_TYPE)
        if has_body or length == 0:
            info, result = await _receive(
                services, store, user, info, request if has_body else None
            )
        headers = _offset_headers(info)
        headers["Location"] = location
        if result is not None:
            return JSONResponse(result, status_code=201, headers=headers)
        return Response(status_code=201, headers=headers)
    except TusError as error:
        return _refusal(error)


async def tus_head(request: Request) -> Response:
    """``HEAD /api/v1/tus/{id}``: how much of the upload the server has."""
    services: Services = request.app.state.services
    try:
        _check_version(request)
        user = await _user(services, request)
        info = _own_upload(
            _store(services), user, request.path_params["upload_id"], services.clock.now()
        )
        headers = _offset_headers(info)
        headers["Upload-Length"] = str(info.length)
        if info.raw_metadata:
            headers["Upload-Metadata"] = info.raw_metadata
        return Response(status_code=200, headers=headers)
    except TusError as error:
        return _refusal(error)


async def tus_patch(request: Request) -> Response:
    """``PATCH /api/v1/tus/{id}``: bytes at ``Upload-Offset``, which must be the offset
    the server has (409 otherwise)."""
    services: Services = request.app.state.services
    try:
        _check_version(request)
        if not request.headers.get("content-type", "").startswith(OFFSET_CONTENT_TYPE):
            raise TusError(415, "missing or invalid Content-Type header")
        user = await _user(services, request)
        store = _store(services)
        info = _own_upload(store, user, request.path_params["upload_id"], services.clock.now())
        raw_offset = request.headers.get("upload-offset")
        if raw_offset is None or not raw_offset.isdigit():
            raise TusError(400, "missing or invalid Upload-Offset header")
        if int(raw_offset) != info.offset:
            raise TusError(409, "mismatched offset")
        info, result = await _receive(services, store, user, info, request)
        if result is not None:
            return JSONResponse(result, status_code=200, headers=_offset_headers(info))
        return Response(status_code=204, headers=_offset_headers(info))
    except TusError as error:
        return _refusal(error)


async def tus_delete(request: Request) -> Response:
    """``DELETE /api/v1/tus/{id}`` (termination): the unfinished upload is dropped."""
    services: Services = request.app.state.services
    try:
        _check_version(request)
        user = await _user(services, request)
        store = _store(services)
        upload_id = request.path_params["upload_id"]
        _own_upload(store, user, upload_id, services.clock.now())
        lock = store.try_lock(upload_id)
        if lock is not None:
            with lock:
                await asyncio.to_thread(
                    store.delete, _own_upload(store, user, upload_id, services.clock.now())
                )
        return Response(status_code=204, headers=_headers())
    except TusError as error:
        return _refusal(error)


async def _receive(
    services: Services,
    store: TusStore,
    user: User,
    info: UploadInfo,
    request: Request | None,
) -> tuple[UploadInfo, dict[str, Any] | None]:
    """Append the request's body under the upload's lock; finish the upload when its
    last byte is in. The new info, and the finished upload's ``{"url", "filename"}``."""
    lock = store.try_lock(info.id)
    if lock is None:
        raise TusError(404, "upload not found")
    with lock:
        # Read again under the lock: another request may have appended meanwhile.
        fresh = _own_upload(store, user, info.id, services.clock.now())
        if fresh.offset != info.offset:
            raise TusError(409, "mismatched offset")
        info = fresh
        if info.finished:
            raise TusError(400, "upload is already finished")
        if request is not None:
            info = await _append_body(store, info, request)
        if info.offset < info.length:
            return info, None
        result = await _finish(services, store, user, info)
        return info, result


async def _append_body(store: TusStore, info: UploadInfo, request: Request) -> UploadInfo:
    remaining = info.length - info.offset
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > remaining:
        raise TusError(413, "upload's size exceeded")
    out: IO[bytes] = await asyncio.to_thread(store.open_for_append, info)
    received = 0
    exceeded = False
    try:
        async for chunk in request.stream():
            if not chunk:
                continue
            if received + len(chunk) > remaining:
                chunk = chunk[: remaining - received]
                exceeded = True
            await asyncio.to_thread(out.write, chunk)
            received += len(chunk)
            if exceeded:
                break
    except OSError:
        # A client gone midway keeps what arrived: resuming is the point of tus.
        pass
    finally:
        await asyncio.to_thread(out.close)
        await asyncio.to_thread(store.save_offset, info, info.offset + received)
    if exceeded:
        raise TusError(413, "upload's size exceeded")
    return info


def _file_name(info: UploadInfo) -> str:
    name = info.metadata.get("filename", "")
    return FALLBACK_FILENAME if name in ("", ".", "..") else name


async def _finish(
    services: Services, store: TusStore, user: User, info: UploadInfo
) -> dict[str, Any]:
    """Store the bytes as an attachment, as ``POST /user_uploads`` does."""
    name = _file_name(info)
    content_type = info.metadata.get("filetype") or guess_content_type(name)
    content_type = content_type[:255]
    path_id = new_path_id(user.realm_id, name)
    storage = active_storage()
    image: ImageInfo | None = None
    with store.data_path(info).open("rb") as source:
        size = await storage.save(path_id, source)
        try:
            source.seek(0)
            image = await create_thumbnails(storage, path_id, source, content_type)
            async with services.write() as tx:
                await do_create_attachment(
                    tx,
                    user,
                    path_id=path_id,
                    file_name=name[:255],
                    content_type=content_type,
                    size=size,
                    now=services.clock.now(),
                    image=image,
                )
        except BaseException:
            await storage.delete(path_id)
            if image is not None:
                await delete_thumbnails(storage, path_id, image.thumbnails)
            raise
    url = f"/user_uploads/{path_id}"
    await asyncio.to_thread(store.mark_finished, info, url=url, filename=name)
    return {"url": url, "filename": name}
