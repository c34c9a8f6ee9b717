"""Logging in with a password (``POST /fetch_api_key``)."""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.users import is_valid_email
from hubbub.credentials import check_password
from hubbub.errors import (
    AuthenticationFailedError,
    InvalidSubdomainError,
    JsonableError,
    PasswordAuthDisabledError,
    RealmDeactivatedError,
    UserDeactivatedError,
)
from hubbub.models import Realm, User
from hubbub.queries.users import get_user_by_delivery_email, realm_ids_with_delivery_email


async def check_password_login(
    conn: AsyncConnection, realm: Realm, username: str, password: str
) -> User:
    """The user these credentials belong to, or the error Zulip gives, in Zulip's order.

    As in Zulip, a deactivated account is reported as such before the password is
    checked, and an address known only in another organization gets "Invalid subdomain".
    """
    username = username.strip()
    if not is_valid_email(username):
        raise JsonableError("Enter a valid email address.")
    if realm.deactivated:
        raise RealmDeactivatedError()
    if not realm.password_auth_enabled:
        raise PasswordAuthDisabledError()
    user = await get_user_by_delivery_email(conn, realm.id, username)
    if user is None:
        if await realm_ids_with_delivery_email(conn, username):
            raise InvalidSubdomainError()
        raise AuthenticationFailedError()
    if not user.is_active:
        raise UserDeactivatedError()
    # Argon2 is deliberately slow; keep it off the event loop.
    if not password or not await asyncio.to_thread(check_password, password, user.password_hash):
        raise AuthenticationFailedError()
    return user
