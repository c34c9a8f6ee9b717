"""Who is calling: the realm from the Host header, the user from HTTP Basic credentials."""

from __future__ import annotations

import base64
import binascii
import functools
import ipaddress

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import HTTPConnection

from hubbub.credentials import api_keys_match, is_well_formed_api_key
from hubbub.errors import (
    JsonableError,
    RealmDeactivatedError,
    UnauthorizedError,
    UserDeactivatedError,
)
from hubbub.models import Realm, User
from hubbub.queries.users import get_login_candidates

# Without a configured external host, "<sub>.localhost" names realm <sub>.
DEFAULT_ROOT_DOMAIN = "localhost"


@functools.lru_cache(maxsize=1024)
def subdomain_from_host(host: str, external_host: str) -> str:
    """The realm subdomain a Host header names; "" for the root domain and for bare IPs.

    Every request asks, with one of a few Host headers; parsing it as an IP address (a
    raised ValueError for every name) was a noticeable part of a re-armed long-poll's
    cost.
    """
    hostname = host.strip().lower()
    if hostname.startswith("["):  # [IPv6]:port
        return ""
    hostname = hostname.rsplit(":", 1)[0]
    try:
        ipaddress.ip_address(hostname)
        return ""
    except ValueError:
        pass
    root = (external_host.rsplit(":", 1)[0] if external_host else DEFAULT_ROOT_DOMAIN).lower()
    if hostname.endswith("." + root):
        return hostname[: -len(root) - 1]
    return ""


def client_address(request: HTTPConnection) -> str:
    """The caller's IP address, which address-based limits count against. It is the
    connection's peer, or what a proxy listed in HUBBUB_TRUSTED_PROXIES said the client
    was: uvicorn rewrites the peer from X-Forwarded-For for those proxies only
    (``server.uvicorn_options``), so a client cannot pick its own address."""
    return request.client.host if request.client else "unknown"


def parse_basic_auth(header: str) -> tuple[str, str]:
    """``Basic base64(email:api_key)`` -> (email, api_key), or raise 401."""
    try:
        scheme, credentials = header.split(None, 1)
    except ValueError:
        raise UnauthorizedError("Invalid authorization header for basic auth") from None
    if scheme.lower() != "basic":
        raise JsonableError("This endpoint requires HTTP basic authentication.")
    try:
        decoded = base64.b64decode(credentials.strip(), validate=True).decode()
        email, api_key = decoded.split(":", 1)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise UnauthorizedError("Invalid authorization header for basic auth") from None
    return email, api_key


async def authenticate(
    conn: AsyncConnection, realm: Realm | None, email: str, api_key: str
) -> User:
    """The active user whose email and API key these are, in ``realm`` (the request's)."""
    subdomain = realm.string_id if realm is not None else None
    user, _ = await authenticate_on_subdomain(conn, subdomain, email, api_key)
    return user


async def authenticate_on_subdomain(
    conn: AsyncConnection, subdomain: str | None, email: str, api_key: str
) -> tuple[User, Realm]:
    """The active user whose email and API key these are, and their realm, which must be
    the one on ``subdomain`` (None: a subdomain with no organization).

    Bad credentials are a 401 with code UNAUTHORIZED, so clients know the key needs
    replacing.
    """
    if not is_well_formed_api_key(api_key):
        raise UnauthorizedError("Malformed API key")
    # Look the account up by email, then compare keys in constant time: an index lookup
    # by key would leak, through timing, how much of a guessed key was right.
    candidates = [
        (user, user_realm)
        for user, user_realm in await get_login_candidates(conn, email)
        if api_keys_match(api_key, user.api_key)
    ]
    if not candidates:
        raise UnauthorizedError("Invalid API key")
    user, user_realm = next(
        (c for c in candidates if subdomain is not None and c[1].string_id == subdomain),
        candidates[0],
    )
    # Zulip 8.0: a deactivated organization or account is a 401 with its own code (since
    # feature level 76); the wrong subdomain is an ordinary 400.
    if user_realm.deactivated:
        raise RealmDeactivatedError()
    if not user.is_active:
        raise UserDeactivatedError()
    if subdomain is None or user_realm.string_id != subdomain:
        raise JsonableError("Account is not associated with this subdomain")
    return user, user_realm
