"""Logging in with a password (``POST /fetch_api_key``, and the old password that
``PATCH /settings`` asks for)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.users import is_valid_email
from hubbub.db.engine import Database
from hubbub.errors import (
    AuthenticationFailedError,
    InvalidSubdomainError,
    JsonableError,
    PasswordAuthDisabledError,
    RealmDeactivatedError,
    UserDeactivatedError,
)
from hubbub.login_limits import LoginGuard
from hubbub.models import Realm, User
from hubbub.queries.users import get_user_by_delivery_email, realm_ids_with_delivery_email


async def _account_elsewhere(conn: AsyncConnection, username: str) -> User | None:
    """The account with this address in another organization, if there is one."""
    for realm_id in await realm_ids_with_delivery_email(conn, username):
        return await get_user_by_delivery_email(conn, realm_id, username)
    return None


async def check_password_login(
    db: Database, guard: LoginGuard, realm: Realm, username: str, password: str, address: str
) -> User:
    """The user these credentials belong to, or the error Zulip gives.

    Every attempt on an organization that takes passwords counts against the caller's
    address and the account named (``login_limits``), and checks one password hash: an
    unknown address is checked against a stand-in hash and fails as a wrong password
    does, so neither the answer nor its timing tells whether an account exists. Unlike
    Zulip, a deactivated account, or an address known only in another organization, is
    reported as such only to a caller who gave that account's right password.
    """
    username = username.strip()
    if not is_valid_email(username):
        raise JsonableError("Enter a valid email address.")
    if realm.deactivated:
        raise RealmDeactivatedError()
    if not realm.password_auth_enabled:
        raise PasswordAuthDisabledError()
    account_key = LoginGuard.account_key(realm.id, username)
    await guard.count_attempt(address, account_key)
    # The connection goes back to the pool before the (slow) hash check.
    async with db.read() as conn:
        user = await get_user_by_delivery_email(conn, realm.id, username)
        elsewhere = await _account_elsewhere(conn, username) if user is None else None
    account = user or elsewhere
    matched = await guard.password_matches(password, account.password_hash if account else None)
    if not matched or account is None:
        raise AuthenticationFailedError()
    if user is None:
        raise InvalidSubdomainError()
    if not user.is_active:
        raise UserDeactivatedError()
    await guard.succeeded(account_key)
    return user


async def check_own_password(guard: LoginGuard, user: User, password: str, address: str) -> bool:
    """Whether ``password`` is ``user``'s, checked under the same limits as a login."""
    account_key = LoginGuard.account_key(user.realm_id, user.delivery_email)
    await guard.count_attempt(address, account_key)
    matched = await guard.password_matches(password, user.password_hash)
    if matched:
        await guard.succeeded(account_key)
    return matched
