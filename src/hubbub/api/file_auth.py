"""Who is asking for a file outside ``/api/v1`` (uploads, thumbnails, avatars).

Zulip's clients authenticate such links with HTTP Basic credentials or an ``api_key``
query parameter; hubbub has no browser sessions, so there is no cookie to fall back on.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request

from hubbub.api.auth import authenticate, client_address, parse_basic_auth
from hubbub.api.headers import header
from hubbub.errors import RateLimitedError, UnauthorizedError
from hubbub.models import Realm, User
from hubbub.queries.users import get_user_by_api_key
from hubbub.services import Services


async def file_viewer(conn: AsyncConnection, request: Request, realm: Realm | None) -> User | None:
    """HTTP Basic credentials, or an ``api_key`` query parameter alone (what Zulip's
    clients add to download links); None for a visitor who sent neither."""
    authorization = header(request.scope, b"authorization")
    if authorization:
        email, api_key = parse_basic_auth(authorization)
        return await authenticate(conn, realm, email, api_key)
    key = request.query_params.get("api_key")
    if key is None:
        return None
    user = await get_user_by_api_key(conn, realm.id, key) if realm is not None and key else None
    if user is None:
        raise UnauthorizedError("Invalid API key")
    return user


async def count_by_address(services: Services, request: Request) -> None:
    """As for the API: failed credentials, and visitors without any, count against the
    caller's address."""
    result = await services.rate_limiter.hit(f"ip:{client_address(request)}")
    if not result.allowed:
        raise RateLimitedError(round(result.reset_after, 3), {})


async def count_by_user(services: Services, user: User) -> None:
    """A download by a known user counts against their API rate limit, as every request
    of theirs does (Zulip serves files through its rate-limited API views)."""
    result = await services.rate_limiter.hit(f"user:{user.id}")
    if not result.allowed:
        raise RateLimitedError(round(result.reset_after, 3), {})
