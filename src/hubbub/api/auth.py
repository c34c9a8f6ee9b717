"""Who is calling: the realm from the Host header, the user from HTTP Basic credentials."""

from __future__ import annotations

import base64
import binascii
import ipaddress

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.credentials import api_keys_match, is_well_formed_api_key
from hubbub.errors import (
    JsonableError,
    RealmDeactivatedError,
    UnauthorizedError,
    UserDeactivatedError,
)
from hubbub.models import Realm, User
from hubbub.queries.realms import get_realm_by_id
from hubbub.queries.users import get_users_by_login_email

# Without a configured external host, "<sub>.localhost" names realm <sub>.
DEFAULT_ROOT_DOMAIN = "localhost"


def subdomain_from_host(host: str, external_host: str) -> str:
    """The realm subdomain a Host header names; "" for the root domain and for bare IPs."""
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
    """The active user whose email and API key these are, in the request's realm.

    Bad credentials are a 401 with code UNAUTHORIZED, so clients know the key needs
    replacing.
    """
    if not is_well_formed_api_key(api_key):
        raise UnauthorizedError("Malformed API key")
    # Look the account up by email, then compare keys in constant time: an index lookup
    # by key would leak, through timing, how much of a guessed key was right.
    candidates = [
        user
        for user in await get_users_by_login_email(conn, email)
        if api_keys_match(api_key, user.api_key)
    ]
    if not candidates:
        raise UnauthorizedError("Invalid API key")
    user = next(
        (u for u in candidates if realm is not None and u.realm_id == realm.id), candidates[0]
    )
    user_realm = await get_realm_by_id(conn, user.realm_id)
    assert user_realm is not None
    # Zulip 8.0: a deactivated organization or account is a 401 with its own code (since
    # feature level 76); the wrong subdomain is an ordinary 400.
    if user_realm.deactivated:
        raise RealmDeactivatedError()
    if not user.is_active:
        raise UserDeactivatedError()
    if realm is None or user.realm_id != realm.id:
        raise JsonableError("Account is not associated with this subdomain")
    return user
