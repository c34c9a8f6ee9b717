"""``GET /avatar/{email_or_id}`` and ``/avatar/{email_or_id}/medium``: a redirect to the
user's avatar (Zulip's ``avatar`` view, served at the site's root like the downloads).

The ``!avatar(...)`` Markdown syntax points here (``markdown/avatars.py``), and clients use
it to show anyone's avatar knowing only their id or email:
- the caller authenticates as for file downloads: HTTP Basic, or an ``api_key`` parameter
  (hubbub has no browser sessions); without credentials only a spectator of an
  organization open to spectators may ask, and only by user id (Zulip's rule);
- a user id or an API email (any case) of the caller's organization names the user, bots
  and deactivated users included; anything else is taken as an address of nobody here
  and gets that address's Gravatar, as in Zulip;
- the answer is a 302 to the avatar URL; ``medium`` asks for the 500-pixel size, and the
  request's query string (``s=30`` from the Markdown) is passed on, without ``api_key``:
  Zulip passes all of it, which would hand a caller's API key to Gravatar.
"""

from __future__ import annotations

import hashlib
from urllib.parse import parse_qsl, urlencode, urlsplit

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from hubbub.api.endpoint import request_subdomain
from hubbub.api.file_auth import count_by_address, file_viewer
from hubbub.api.responses import json_error
from hubbub.errors import ApiError, UnauthorizedError
from hubbub.models import Realm, User
from hubbub.queries.realms import get_realm_by_subdomain
from hubbub.queries.user_dicts import GRAVATAR_URL, avatar_url
from hubbub.queries.users import get_user_by_email, get_user_by_id
from hubbub.services import Services

# Zulip's MEDIUM_AVATAR_SIZE, in pixels.
MEDIUM_AVATAR_SIZE = 500


def gravatar_url(email: str, version: int = 1) -> str:
    """The Gravatar of an address no user here has (Zulip's ``get_gravatar_url``)."""
    digest = hashlib.md5(email.lower().encode(), usedforsecurity=False).hexdigest()
    return GRAVATAR_URL.format(hash=digest, version=version)


def with_query(url: str, *, medium: bool, query: str) -> str:
    """``url`` asking for the medium size, then with the caller's ``query`` appended."""
    parts = urlsplit(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    if medium:
        # Right after Gravatar's default-image parameter, as Zulip writes it.
        at = next((i + 1 for i, (name, _) in enumerate(params) if name == "d"), len(params))
        params.insert(at, ("s", str(MEDIUM_AVATAR_SIZE)))
    params += [
        (name, value)
        for name, value in parse_qsl(query, keep_blank_values=True)
        if name != "api_key"
    ]
    return parts._replace(query=urlencode(params)).geturl()


async def _target(conn: AsyncConnection, realm: Realm, email_or_id: str) -> User | None:
    if email_or_id.isdigit():
        return await get_user_by_id(conn, realm.id, int(email_or_id))
    return await get_user_by_email(conn, realm.id, email_or_id)


async def avatar_location(services: Services, request: Request, *, medium: bool) -> str:
    """Where the avatar the request names is, or raise as the API does."""
    email_or_id = request.path_params["email_or_id"]
    async with services.db.read() as conn:
        realm = await get_realm_by_subdomain(conn, request_subdomain(services, request))
        try:
            caller = await file_viewer(conn, request, realm)
        except ApiError:
            await count_by_address(services, request)
            raise
        if caller is None:
            await count_by_address(services, request)
            spectators = (
                realm is not None
                and services.settings.web_public_streams_enabled
                and realm.enable_spectator_access
            )
            # Spectators name users by id only: their emails are not theirs to know.
            if not spectators or not email_or_id.isdigit():
                raise UnauthorizedError()
        assert realm is not None
        target = await _target(conn, realm, email_or_id)
    url = avatar_url(target, client_gravatar=False) if target is not None else None
    return with_query(
        url or gravatar_url(email_or_id),
        medium=medium,
        query=request.url.query,
    )


async def _redirect(request: Request, *, medium: bool) -> Response:
    services: Services = request.app.state.services
    try:
        url = await avatar_location(services, request, medium=medium)
    except ApiError as error:
        return json_error(error)
    return RedirectResponse(url, status_code=302)


async def serve_avatar(request: Request) -> Response:
    """``GET /avatar/{email_or_id}``."""
    return await _redirect(request, medium=False)


async def serve_medium_avatar(request: Request) -> Response:
    """``GET /avatar/{email_or_id}/medium``."""
    return await _redirect(request, medium=True)


def avatar_routes() -> list[BaseRoute]:
    """The avatar redirects, mounted at the site's root by ``create_app``."""
    return [
        Route("/avatar/{email_or_id}", serve_avatar, methods=["GET", "HEAD"]),
        Route("/avatar/{email_or_id}/medium", serve_medium_avatar, methods=["GET", "HEAD"]),
    ]
