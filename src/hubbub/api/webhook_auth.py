"""How an incoming webhook authenticates: the ``api_key`` URL parameter (what a service's
webhook settings can hold), or HTTP Basic credentials as on the rest of the API.

Zulip 10.2's ``webhook_view`` takes any active account's key, an incoming-webhook bot's
being the usual one; its errors carry the code ``INVALID_API_KEY``.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request

from hubbub.api.auth import authenticate_on_subdomain, parse_basic_auth
from hubbub.api.headers import header
from hubbub.credentials import is_well_formed_api_key
from hubbub.errors import (
    MissingArgumentError,
    NotFoundError,
    RealmDeactivatedError,
    UserDeactivatedError,
)
from hubbub.integrations import get_integration
from hubbub.integrations.errors import InvalidWebhookApiKeyError
from hubbub.models import Realm, User
from hubbub.queries.realms import get_realm_by_subdomain
from hubbub.queries.webhook_users import get_user_by_api_key_any_state


async def authenticate_webhook(
    conn: AsyncConnection, request: Request, subdomain: str, args: dict[str, str]
) -> tuple[User, Realm]:
    # An unknown integration has no URL at all: 404 before any authentication.
    if get_integration(str(request.path_params.get("integration", ""))) is None:
        raise NotFoundError()
    api_key = args.get("api_key")
    if api_key is None:
        authorization = header(request.scope, b"authorization")
        if authorization:
            email, key = parse_basic_auth(authorization)
            return await authenticate_on_subdomain(conn, subdomain, email, key)
        raise MissingArgumentError("api_key")
    api_key = api_key.strip()
    if not is_well_formed_api_key(api_key):
        raise InvalidWebhookApiKeyError("Malformed API key")
    realm = await get_realm_by_subdomain(conn, subdomain)
    user = None if realm is None else await get_user_by_api_key_any_state(conn, realm.id, api_key)
    if realm is None or user is None:
        raise InvalidWebhookApiKeyError()
    if realm.deactivated:
        raise RealmDeactivatedError()
    if not user.is_active:
        raise UserDeactivatedError()
    return user, realm
