"""Files about emoji, served at the site's root without credentials (as Zulip's web
server serves them): custom emoji images at ``/user_avatars/<realm id>/emoji/images/``,
and the Unicode emoji data file the mobile apps download (``server_emoji_data_url``).

Both never change under their URL: an image's file name is new for every upload, and the
data file's path carries its key. So both may be cached for good.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from hubbub.api.responses import json_error
from hubbub.errors import ApiError
from hubbub.markdown.emoji import EMOJI_DATA_PATH, emoji_data_json, emoji_data_key
from hubbub.queries.realm_emoji import emoji_path_id
from hubbub.uploads import active_storage
from hubbub.uploads.emoji import EMOJI_TYPES
from hubbub.uploads.serving import FILE_CONTENT_SECURITY_POLICY

FOREVER = "public, max-age=31536000, immutable"
_CONTENT_TYPES = {extension: content_type for content_type, (extension, _) in EMOJI_TYPES.items()}
# The names ``new_emoji_file_name`` makes; nothing else is ever served from here.
_FILE_NAME = re.compile(r"[0-9a-f]{1,64}(\.[a-z]{3,4})")


class EmojiFileNotFoundError(ApiError):
    code = None
    http_status = 404

    def __init__(self) -> None:
        super().__init__("File not found.")


async def _serve_image(request: Request, *, still: bool) -> Response:
    try:
        realm_id: int = request.path_params["realm_id"]
        file_name: str = request.path_params["file_name"]
        found = _FILE_NAME.fullmatch(file_name)
        if found is None or found.group(1) not in _CONTENT_TYPES:
            raise EmojiFileNotFoundError()
        if still and found.group(1) != ".png":
            raise EmojiFileNotFoundError()
        # A still's URL names it "<emoji file without extension>.png" already.
        path_id = emoji_path_id(realm_id, file_name, still=still)
        storage = active_storage()
        size = await storage.size(path_id)
        if size is None:
            raise EmojiFileNotFoundError()
    except ApiError as error:
        return json_error(error)
    headers = {
        "Content-Type": _CONTENT_TYPES[found.group(1)],
        "Content-Length": str(size),
        "Cache-Control": FOREVER,
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": FILE_CONTENT_SECURITY_POLICY,
    }
    if request.method == "HEAD":
        return Response(b"", headers=headers)
    return StreamingResponse(storage.open(path_id), headers=headers)


async def serve_emoji_image(request: Request) -> Response:
    """``GET /user_avatars/<realm id>/emoji/images/<file>``."""
    return await _serve_image(request, still=False)


async def serve_emoji_still(request: Request) -> Response:
    """``GET /user_avatars/<realm id>/emoji/images/still/<file>.png``: an animated emoji's
    first frame."""
    return await _serve_image(request, still=True)


@lru_cache(maxsize=1)
def _data_etag() -> str:
    return '"' + hashlib.sha256(emoji_data_json()).hexdigest()[:32] + '"'


async def serve_emoji_data(request: Request) -> Response:
    """``GET /static/generated/emoji/emoji_api.<key>.json``: the data of the path
    ``server_emoji_data_url`` names now; another key is not found."""
    if request.path_params["key"] != emoji_data_key():
        return json_error(EmojiFileNotFoundError())
    etag = _data_etag()
    headers = {"Cache-Control": FOREVER, "ETag": etag, "Content-Type": "application/json"}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    body = b"" if request.method == "HEAD" else emoji_data_json()
    headers["Content-Length"] = str(len(emoji_data_json()))
    return Response(body, headers=headers)


def emoji_routes() -> list[BaseRoute]:
    """The routes, mounted at the site's root by ``create_app``."""
    return [
        Route(
            "/user_avatars/{realm_id:int}/emoji/images/still/{file_name}",
            serve_emoji_still,
            methods=["GET", "HEAD"],
        ),
        Route(
            "/user_avatars/{realm_id:int}/emoji/images/{file_name}",
            serve_emoji_image,
            methods=["GET", "HEAD"],
        ),
        Route(
            EMOJI_DATA_PATH.format(key="{key}"),
            serve_emoji_data,
            methods=["GET", "HEAD"],
        ),
    ]
