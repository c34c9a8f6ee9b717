"""Uploads: ``POST /user_uploads``, ``GET /attachments``, ``DELETE /attachments/{id}``,
temporary download links, and serving the files themselves at ``/user_uploads/...``,
an image's thumbnails at ``/user_uploads/thumbnail/...`` and Zulip 8.0's ``/thumbnail``
links (outside /api/v1, as in Zulip; see ``upload_routes``)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from hubbub.actions.attachments import (
    check_delete_attachment,
    do_create_attachment,
    do_record_thumbnails,
)
from hubbub.api.endpoint import ApiRequest, Payload, endpoint, request_subdomain
from hubbub.api.file_auth import count_by_address, count_by_user, file_viewer
from hubbub.api.params import PathInt, PathStr
from hubbub.api.responses import json_error
from hubbub.errors import (
    ApiError,
    JsonableError,
    MissingArgumentError,
    UnauthorizedError,
)
from hubbub.markdown.links import is_image_url
from hubbub.models import Realm, User
from hubbub.queries.attachments import (
    Attachment,
    can_read_attachment,
    get_attachment_by_path_id,
    get_attachment_dicts,
    is_web_public_attachment,
    list_attachments,
    upload_space_used,
)
from hubbub.queries.image_attachments import ImageAttachment, get_image_attachment
from hubbub.queries.realms import get_realm_by_subdomain
from hubbub.queries.users import get_user_by_id
from hubbub.services import Services
from hubbub.uploads import active_storage
from hubbub.uploads.paths import guess_content_type, is_valid_path_id, new_path_id
from hubbub.uploads.serving import file_headers
from hubbub.uploads.storage import thumbnail_key
from hubbub.uploads.temporary import make_temporary_token, parse_temporary_token
from hubbub.uploads.thumbnails import (
    ImageInfo,
    StoredThumbnail,
    ThumbnailFormat,
    choose_thumbnail,
    create_thumbnails,
    delete_thumbnails,
    make_missing_thumbnail,
)

MIB = 1024 * 1024


class FileNotFoundApiError(ApiError):
    code = None
    http_status = 404

    def __init__(self) -> None:
        # Zulip answers these two in HTML ("<p>File not found.</p>"); hubbub answers JSON.
        super().__init__("File not found.")


class FileForbiddenError(ApiError):
    code = None
    http_status = 403

    def __init__(self) -> None:
        super().__init__("You are not authorized to view this file.")


@endpoint("POST", "/user_uploads")
async def upload_file(req: ApiRequest) -> Payload:
    """Upload a file"""
    # The official client names the file's form field after the file's path, so any field
    # holding a file is the upload. The form was parsed (and cached) by the dispatcher.
    form = await req.http.form()
    files = [value for _, value in form.multi_items() if isinstance(value, UploadFile)]
    if not files:
        raise JsonableError("You must specify a file to upload")
    if len(files) > 1:
        raise JsonableError("You may only upload one file at a time")
    upload = files[0]
    limit = req.services.settings.max_file_upload_mib
    if upload.size is None or upload.size > limit * MIB:
        # Zulip 8.0's wording (later versions say "File is larger than this server's
        # configured maximum upload size").
        raise JsonableError(f"Uploaded file is larger than the allowed limit of {limit} MiB")
    name = upload.filename or ""
    path_id = new_path_id(req.my_realm.id, name)
    storage = active_storage()
    await upload.seek(0)
    size = await storage.save(path_id, upload.file)
    content_type = guess_content_type(name)
    if content_type == "application/octet-stream" and upload.content_type:
        content_type = upload.content_type
    image: ImageInfo | None = None
    try:
        # Made before the upload is recorded, so that no message can link the image
        # before its thumbnails exist (Zulip makes them later and edits such messages).
        image = await create_thumbnails(storage, path_id, upload.file, content_type[:255])
        async with req.services.write() as tx:
            await do_create_attachment(
                tx,
                req.me,
                path_id=path_id,
                file_name=(name or path_id.rsplit("/", 1)[-1])[:255],
                content_type=content_type[:255],
                size=size,
                now=req.services.clock.now(),
                image=image,
            )
    except BaseException:
        await storage.delete(path_id)
        if image is not None:
            await delete_thumbnails(storage, path_id, image.thumbnails)
        raise
    url = f"/user_uploads/{path_id}"
    # ``url`` (feature level 272) replaces ``uri``, still sent for older clients;
    # ``filename`` (feature level 286) is the name as uploaded, which the URL's last
    # segment may only approximate.
    return {"uri": url, "url": url, "filename": (name or path_id.rsplit("/", 1)[-1])[:255]}


@endpoint("GET", "/attachments")
async def get_attachments(req: ApiRequest) -> Payload:
    """Get attachments"""
    async with req.services.db.read() as conn:
        mine = await list_attachments(conn, req.me.id)
        return {
            "attachments": await get_attachment_dicts(conn, mine),
            "upload_space_used": await upload_space_used(conn, req.my_realm.id),
        }


@endpoint("DELETE", "/attachments/{attachment_id:int}")
async def remove_attachment(req: ApiRequest, *, attachment_id: PathInt) -> Payload:
    """Delete an attachment"""
    async with req.services.write() as tx:
        await check_delete_attachment(tx, req.me, attachment_id)
    return {}


@endpoint("GET", "/user_uploads/{realm_id_str:int}/{filename:path}")
async def get_file_temporary_url(
    req: ApiRequest, *, realm_id_str: PathInt, filename: PathStr
) -> Payload:
    """Get public temporary URL"""
    async with req.services.db.read() as conn:
        target = await _access_file(conn, req.me, req.my_realm, f"{realm_id_str}/{filename}")
    token = make_temporary_token(
        target.path_id, req.me.id, req.me.api_key, req.services.clock.now()
    )
    return {"url": f"/user_uploads/temporary/{token}/{target.path_id.rsplit('/', 1)[-1]}"}


async def _find_file(conn: AsyncConnection, realm: Realm, path_id: str) -> Attachment:
    """The realm's file with this path id, or 404."""
    target = await get_attachment_by_path_id(conn, path_id) if is_valid_path_id(path_id) else None
    if target is None or target.realm_id != realm.id:
        raise FileNotFoundApiError()
    return target


async def _access_file(conn: AsyncConnection, user: User, realm: Realm, path_id: str) -> Attachment:
    target = await _find_file(conn, realm, path_id)
    if not await can_read_attachment(conn, user, target):
        raise FileForbiddenError()
    return target


# --- the files themselves (outside /api/v1) ----------------------------------------------


async def _spectator_file(
    conn: AsyncConnection, services: Services, realm: Realm | None, path_id: str
) -> Attachment:
    """A file for a visitor without credentials: only one linked from a web-public stream,
    in an organization that lets spectators in. Zulip sends such a visitor to its login
    page; hubbub has none, so it answers as the API does to a request without
    credentials."""
    if realm is None:
        raise UnauthorizedError()
    target = await _find_file(conn, realm, path_id)
    allowed = services.settings.web_public_streams_enabled and realm.enable_spectator_access
    if not allowed or not await is_web_public_attachment(conn, target):
        raise UnauthorizedError()
    return target


async def _file_response(request: Request, target: Attachment) -> Response:
    storage = active_storage()
    size = await storage.size(target.path_id)
    if size is None:
        raise FileNotFoundApiError()
    content_type = target.content_type or guess_content_type(target.file_name)
    headers = file_headers(target.path_id.rsplit("/", 1)[-1], content_type, size)
    if request.method == "HEAD":
        return Response(b"", headers=headers)
    return StreamingResponse(storage.open(target.path_id), headers=headers)


async def _realm(services: Services, conn: AsyncConnection, request: Request) -> Realm | None:
    return await get_realm_by_subdomain(conn, request_subdomain(services, request))


async def _viewable_file(
    conn: AsyncConnection, services: Services, request: Request, path_id: str
) -> Attachment:
    """The upload, if the request's viewer (a user, or a spectator) may see it."""
    realm = await _realm(services, conn, request)
    try:
        user = await file_viewer(conn, request, realm)
    except ApiError:
        await count_by_address(services, request)
        raise
    if user is None:
        # Spectators are counted by address, as failed logins are.
        await count_by_address(services, request)
        return await _spectator_file(conn, services, realm, path_id)
    await count_by_user(services, user)
    assert realm is not None
    return await _access_file(conn, user, realm, path_id)


async def serve_user_upload(request: Request) -> Response:
    """``GET /user_uploads/<realm id>/<path>``: the file, to those allowed to see it."""
    services: Services = request.app.state.services
    try:
        path_id = f"{request.path_params['realm_id']}/{request.path_params['path']}"
        async with services.db.read() as conn:
            target = await _viewable_file(conn, services, request, path_id)
        return await _file_response(request, target)
    except ApiError as error:
        return json_error(error)


async def _thumbnail_response(
    request: Request, path_id: str, thumbnail: StoredThumbnail
) -> Response:
    storage = active_storage()
    key = thumbnail_key(path_id, thumbnail.format.name)
    size = await storage.size(key)
    if size is None:
        raise FileNotFoundApiError()
    headers = file_headers(thumbnail.format.name, thumbnail.content_type, size)
    if request.method == "HEAD":
        return Response(b"", headers=headers)
    return StreamingResponse(storage.open(key), headers=headers)


async def _make_missing(
    services: Services, image: ImageAttachment, fmt: ThumbnailFormat
) -> StoredThumbnail:
    """Make the current formats the image lacks, ``fmt`` among them, and record them
    (Zulip, too, makes them while the request waits)."""
    made = await make_missing_thumbnail(active_storage(), image.path_id, image.info, fmt)
    thumbnail = made.rendered(fmt.name) if made is not None else None
    if made is None or thumbnail is None:
        raise FileNotFoundApiError()
    async with services.write() as tx:
        await do_record_thumbnails(tx, image.path_id, made)
    return thumbnail


async def serve_thumbnail(request: Request) -> Response:
    """``GET /user_uploads/thumbnail/<realm id>/<path>/<format>`` (feature level 273): a
    thumbnail, to those who may see the original. A format hubbub does not make gets
    the nearest one that was made, as in Zulip; an upload that is not an image, or a
    name that is not a format, is not found (Zulip answers with an image of that
    message; hubbub answers JSON, as for its other missing files)."""
    services: Services = request.app.state.services
    try:
        path, _, name = str(request.path_params["path"]).rpartition("/")
        path_id = f"{request.path_params['realm_id']}/{path}"
        accept = request.headers.get("accept", "")
        async with services.db.read() as conn:
            await _viewable_file(conn, services, request, path_id)
            image = await get_image_attachment(conn, path_id)
        choice = choose_thumbnail(image.info, name, accept) if image is not None else None
        if image is None or choice is None:
            raise FileNotFoundApiError()
        thumbnail = choice.thumbnail
        if thumbnail is None:
            assert choice.missing is not None
            thumbnail = await _make_missing(services, image, choice.missing)
        return await _thumbnail_response(request, path_id, thumbnail)
    except ApiError as error:
        return json_error(error)


# ``/thumbnail?url=user_uploads/...``: the link form Zulip 8.0's Markdown wrote.
_LEGACY_UPLOAD_RE = re.compile(r"^/?user_uploads/(\d+/.+)$")


async def serve_legacy_thumbnail(request: Request) -> Response:
    """``GET /thumbnail?url=...&size=...``, the image links of Zulip 8.0's Markdown, which
    hubbub still writes for images outside the realm. An upload is served whole, to
    those who may see it (as in Zulip 10.2); any other image URL is redirected to, for
    a user or a spectator the realm lets in. Zulip 10.2 refuses the second kind (it
    used to send them through its camo proxy, which hubbub does not have)."""
    services: Services = request.app.state.services
    try:
        params = request.query_params
        for var in ("url", "size"):
            if var not in params:
                raise MissingArgumentError(var)
        url = params["url"]
        upload_link = _LEGACY_UPLOAD_RE.match(url)
        async with services.db.read() as conn:
            if upload_link is not None:
                target = await _viewable_file(conn, services, request, upload_link.group(1))
            else:
                await _external_viewer(conn, services, request)
        if upload_link is not None:
            return await _file_response(request, target)
        if urlsplit(url).scheme.lower() not in ("http", "https") or not is_image_url(url):
            raise FileForbiddenError()
        return RedirectResponse(url, status_code=302, headers={"Cache-Control": "private"})
    except ApiError as error:
        return json_error(error)


async def _external_viewer(conn: AsyncConnection, services: Services, request: Request) -> None:
    """A user of the request's realm, or a spectator where the realm lets them in (the
    redirect to an outside image is no open door for anyone else)."""
    realm = await _realm(services, conn, request)
    try:
        user = await file_viewer(conn, request, realm)
    except ApiError:
        await count_by_address(services, request)
        raise
    if user is not None:
        await count_by_user(services, user)
        return
    await count_by_address(services, request)
    if realm is None or not (
        services.settings.web_public_streams_enabled and realm.enable_spectator_access
    ):
        raise UnauthorizedError()


async def serve_temporary_upload(request: Request) -> Response:
    """``GET /user_uploads/temporary/<token>/<file name>``: a link made by
    ``get_file_temporary_url``, without credentials, until it expires."""
    services: Services = request.app.state.services
    try:
        # The link carries no credentials: it counts against the caller's address, as
        # a spectator's download does.
        await count_by_address(services, request)
        claims = parse_temporary_token(request.path_params["token"])
        if claims is None:
            raise JsonableError("Invalid token")
        async with services.db.read() as conn:
            realm = await _realm(services, conn, request)
            user = await get_user_by_id(conn, realm.id, claims.user_id) if realm else None
            if (
                user is None
                or not user.is_active
                or not claims.is_valid(user.api_key, services.clock.now())
            ):
                raise JsonableError("Invalid token")
            if claims.path_id.rsplit("/", 1)[-1] != request.path_params["filename"]:
                raise JsonableError("Invalid filename")
            assert realm is not None
            target = await _access_file(conn, user, realm, claims.path_id)
        return await _file_response(request, target)
    except ApiError as error:
        return json_error(error)


def upload_routes() -> list[BaseRoute]:
    """The download routes, mounted at the site's root by ``create_app``."""
    return [
        Route(
            "/user_uploads/temporary/{token}/{filename}",
            serve_temporary_upload,
            methods=["GET", "HEAD"],
        ),
        Route(
            "/user_uploads/thumbnail/{realm_id:int}/{path:path}",
            serve_thumbnail,
            methods=["GET", "HEAD"],
        ),
        Route("/thumbnail", serve_legacy_thumbnail, methods=["GET", "HEAD"]),
        Route(
            "/user_uploads/{realm_id:int}/{path:path}",
            serve_user_upload,
            methods=["GET", "HEAD"],
        ),
    ]
