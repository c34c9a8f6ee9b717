"""Creating, changing, deactivating and reactivating users.

``check_*`` validates and then calls ``do_*``; ``do_*`` trusts its input. Every function
runs inside the caller's write transaction (``Tx``) and queues its ``realm_user`` events
there, to be published after the commit.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import uuid

import sqlalchemy as sa

from hubbub.actions.bot_events import (
    notify_bot_access_changed,
    notify_bot_created,
    notify_bot_updated,
    notify_bots_api_keys_changed,
)
from hubbub.actions.realm_group_settings import notify_group_settings_of_user
from hubbub.actions.streams import notify_subscriber_activity, subscribe_to_default_streams
from hubbub.actions.unique_names import check_unique_full_name
from hubbub.actions.user_events import notify_user_created, notify_user_updated
from hubbub.actions.user_groups import do_update_role_groups
from hubbub.actions.user_settings import do_copy_realm_user_defaults
from hubbub.credentials import generate_api_key, hash_password, is_strong_password
from hubbub.db.tables import user_profile
from hubbub.errors import (
    CannotDeactivateLastUserError,
    JsonableError,
    OrganizationAdminRequiredError,
    OrganizationOwnerRequiredError,
)
from hubbub.models import EmailVisibility, Realm, Role, User
from hubbub.queries.realms import get_realm_by_id
from hubbub.queries.user_dicts import api_email
from hubbub.queries.users import (
    count_active_humans,
    count_active_owners,
    get_user_by_delivery_email,
    get_user_by_id,
    list_active_bots_owned_by,
)
from hubbub.text_checks import unprintable_position
from hubbub.transaction import Tx

MAX_NAME_LENGTH = 100
MIN_NAME_LENGTH = 2
# Characters Zulip refuses in names: they would break mention syntax and Markdown.
_NAME_FORBIDDEN = set('*`\\>"@')
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+$")
_DOMAIN_LABEL_RE = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")


def check_full_name(raw: str) -> str:
    name = raw.strip()
    if len(name) > MAX_NAME_LENGTH:
        raise JsonableError("Name too long!")
    if len(name) < MIN_NAME_LENGTH:
        raise JsonableError("Name too short!")
    if unprintable_position(name) is not None or any(c in _NAME_FORBIDDEN for c in name):
        raise JsonableError("Invalid characters in name!")
    # "Name|15" would be ambiguous with the @**Name|15** mention syntax.
    if re.search(r"\|\d+$", name):
        raise JsonableError("Invalid format!")
    return name


def is_valid_email(email: str) -> bool:
    if len(email) > 254 or not _EMAIL_RE.match(email):
        return False
    local, domain = email.rsplit("@", 1)
    if len(local) > 64 or local.startswith(".") or local.endswith(".") or ".." in local:
        return False
    return all(_DOMAIN_LABEL_RE.match(label) for label in domain.split("."))


def check_email(email: str) -> str:
    email = email.strip()
    if not is_valid_email(email):
        raise JsonableError("Bad name or username")
    return email


def check_password_strength(password: str) -> str:
    if not is_strong_password(password):
        raise JsonableError("The password is too weak.")
    return password


def check_role(role: int) -> Role:
    try:
        return Role(role)
    except ValueError:
        raise JsonableError("Invalid role") from None


async def check_create_user(
    tx: Tx,
    realm: Realm,
    *,
    email: str,
    full_name: str,
    password: str | None,
    role: int = Role.MEMBER,
    bot_type: int | None = None,
    bot_owner_id: int | None = None,
    now: float,
) -> User:
    email = check_email(email)
    full_name = check_full_name(full_name)
    await check_unique_full_name(tx.conn, realm.id, full_name)
    role = check_role(role)
    if password is not None:
        check_password_strength(password)
    if await get_user_by_delivery_email(tx.conn, realm.id, email) is not None:
        raise JsonableError(f"Email '{email}' already in use")
    return await do_create_user(
        tx,
        realm,
        email=email,
        full_name=full_name,
        password=password,
        role=role,
        bot_type=bot_type,
        bot_owner_id=bot_owner_id,
        now=now,
    )


async def do_create_user(
    tx: Tx,
    realm: Realm,
    *,
    email: str,
    full_name: str,
    password: str | None,
    role: int,
    bot_type: int | None,
    bot_owner_id: int | None,
    now: float,
) -> User:
    conn = tx.conn
    is_bot = bot_type is not None
    # Bots' emails are always visible; humans start from the realm default.
    visibility = EmailVisibility.EVERYONE if is_bot else realm.default_email_address_visibility
    result = await conn.execute(
        sa.insert(user_profile).values(
            realm_id=realm.id,
            # Unique placeholder until the id, which a dummy address needs, is known.
            email=email if visibility == EmailVisibility.EVERYONE else f"{uuid.uuid4()}@pending",
            delivery_email=email,
            full_name=full_name,
            # Argon2 is deliberately slow; keep it off the event loop.
            password_hash=await asyncio.to_thread(hash_password, password) if password else None,
            api_key=generate_api_key(),
            role=role,
            is_bot=is_bot,
            bot_type=bot_type,
            bot_owner_id=bot_owner_id,
            date_joined=now,
            email_address_visibility=visibility,
        )
    )
    user_id = int(result.inserted_primary_key[0])  # type: ignore[index]
    if visibility != EmailVisibility.EVERYONE:
        await conn.execute(
            sa.update(user_profile)
            .where(user_profile.c.id == user_id)
            .values(email=api_email(user_id, email, visibility))
        )
    # New users start from the realm's defaults for their settings (feature level 96).
    await do_copy_realm_user_defaults(tx, realm, user_id)
    user = await get_user_by_id(conn, realm.id, user_id)
    assert user is not None
    await notify_user_created(tx, user)
    if is_bot:
        await notify_bot_created(tx, user)
    await do_update_role_groups(tx, user, None)
    if not is_bot:
        await subscribe_to_default_streams(tx, realm, user)
    return user


async def do_regenerate_api_key(tx: Tx, user: User) -> str:
    """A new random API key for ``user``; the old one stops working with this commit.

    Zulip serves this as ``POST /users/me/api_key/regenerate`` without documenting it, and
    sends no event for a human's key (clients other than the caller must log in again).
    """
    api_key = generate_api_key()
    await tx.conn.execute(
        sa.update(user_profile).where(user_profile.c.id == user.id).values(api_key=api_key)
    )
    tx.forget_credentials([user.id])
    await notify_bot_updated(tx, user, api_key=api_key)
    return api_key


async def do_revoke_api_keys(tx: Tx, realm_id: int, user_ids: list[int] | None) -> int:
    """Replace the API keys of ``user_ids`` (None: every user of the realm) with new ones
    that nobody is shown; the users fetch theirs again with their password
    (``POST /fetch_api_key``). How many keys were replaced."""
    query = sa.select(user_profile.c.id).where(user_profile.c.realm_id == realm_id)
    if user_ids is not None:
        query = query.where(user_profile.c.id.in_(user_ids))
    ids = list((await tx.conn.execute(query)).scalars())
    for user_id in ids:
        await tx.conn.execute(
            sa.update(user_profile)
            .where(user_profile.c.id == user_id)
            .values(api_key=generate_api_key())
        )
    tx.forget_credentials(ids)
    await notify_bots_api_keys_changed(tx, realm_id, ids)
    return len(ids)


async def do_change_full_name(tx: Tx, user: User, full_name: str) -> None:
    await tx.conn.execute(
        sa.update(user_profile).where(user_profile.c.id == user.id).values(full_name=full_name)
    )
    await notify_user_updated(tx, user, full_name=full_name)
    await notify_bot_updated(tx, user, full_name=full_name)


async def check_change_role(tx: Tx, acting: User, target: User, role: int) -> None:
    """Administrators change roles; only owners grant or remove the owner role; the last
    owner keeps it. Zulip's order of checks."""
    new_role = check_role(role)
    if new_role == target.role:
        return
    if Role.OWNER in (new_role, target.role) and not acting.is_owner:
        raise OrganizationOwnerRequiredError()
    if not acting.is_realm_admin:
        raise OrganizationAdminRequiredError()
    if (
        target.role == Role.OWNER
        and not target.is_bot
        and await count_active_owners(tx.conn, target.realm_id) <= 1
    ):
        raise JsonableError(
            "The owner permission cannot be removed from the only organization owner."
        )
    await do_change_role(tx, target, new_role)


async def do_change_role(tx: Tx, user: User, role: Role) -> None:
    await tx.conn.execute(
        sa.update(user_profile).where(user_profile.c.id == user.id).values(role=role)
    )
    await notify_user_updated(tx, user, role=int(role))
    await notify_bot_access_changed(tx, user, role)
    await do_update_role_groups(tx, dataclasses.replace(user, role=role), Role(user.role))


async def check_deactivate_user(tx: Tx, acting: User, target: User) -> None:
    """An administrator deactivating someone (``DELETE /users/{id}``)."""
    if target.is_owner and not acting.is_owner:
        raise OrganizationOwnerRequiredError()
    if target.is_owner and await count_active_owners(tx.conn, target.realm_id) <= 1:
        raise JsonableError("Cannot deactivate the only organization owner")
    await do_deactivate_user(tx, target)


async def check_deactivate_own_user(tx: Tx, user: User) -> None:
    """A user leaving (``DELETE /users/me``); the organization keeps a user and an owner."""
    if await count_active_humans(tx.conn, user.realm_id) <= 1:
        raise CannotDeactivateLastUserError(is_last_owner=False)
    if user.is_owner and await count_active_owners(tx.conn, user.realm_id) <= 1:
        raise CannotDeactivateLastUserError(is_last_owner=True)
    await do_deactivate_user(tx, user)


async def do_deactivate_user(tx: Tx, user: User) -> None:
    """Deactivate ``user`` and, for a human, the bots they own (as Zulip does).

    Since feature level 222 this is a ``realm_user`` update with ``is_active``, not a
    remove event.
    """
    await _set_active(tx, user, False)
    if not user.is_bot:
        for bot in await list_active_bots_owned_by(tx.conn, user.id):
            await _set_active(tx, bot, False)


async def do_reactivate_user(tx: Tx, user: User) -> None:
    if not user.is_active:
        await _set_active(tx, user, True)


async def _set_active(tx: Tx, user: User, active: bool) -> None:
    await tx.conn.execute(
        sa.update(user_profile).where(user_profile.c.id == user.id).values(is_active=active)
    )
    if not active:
        tx.forget_credentials([user.id])
    await notify_user_updated(tx, user, is_active=active)
    await notify_bot_updated(tx, user, is_active=active)
    await notify_subscriber_activity(tx, user, active)
    # Anonymous groups of the organization's settings list active users only.
    realm = await get_realm_by_id(tx.conn, user.realm_id)
    if realm is not None:
        await notify_group_settings_of_user(tx, realm, user.id)
