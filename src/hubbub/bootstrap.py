"""First start and account set-up shared by ``hubbub serve`` and the other commands."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hubbub.actions.realms import check_create_realm
from hubbub.actions.users import check_create_user
from hubbub.credentials import generate_password
from hubbub.models import BotType, Realm, Role, User
from hubbub.queries.realms import access_realm_by_subdomain, count_realms
from hubbub.queries.users import (
    access_user_by_email,
    get_first_owner_id,
    get_user_by_delivery_email,
)
from hubbub.services import Services

ROOT_REALM_NAME = "Hubbub"
OWNER_FULL_NAME = "Organization Owner"


@dataclass(frozen=True)
class FirstOwner:
    realm: Realm
    user: User
    password: str


async def ensure_first_realm(services: Services) -> FirstOwner | None:
    """On an empty database, create the root organization and its owner (once)."""
    async with services.write() as tx:
        if await count_realms(tx.conn) > 0:
            return None
        now = services.clock.now()
        realm = await check_create_realm(tx.conn, subdomain="", name=ROOT_REALM_NAME, now=now)
        password = generate_password()
        user = await check_create_user(
            tx,
            realm,
            email=services.settings.owner_email,
            full_name=OWNER_FULL_NAME,
            password=password,
            role=Role.OWNER,
            now=now,
        )
    return FirstOwner(realm, user, password)


async def create_user_in_realm(
    services: Services,
    *,
    subdomain: str,
    email: str,
    full_name: str,
    role: Role,
    password: str | None,
    bot: bool,
    bot_type: BotType = BotType.GENERIC,
) -> User:
    """``hubbub create-user``: a bot belongs to the organization's first owner."""
    async with services.write() as tx:
        realm = await access_realm_by_subdomain(tx.conn, subdomain)
        bot_owner_id = await get_first_owner_id(tx.conn, realm.id) if bot else None
        return await check_create_user(
            tx,
            realm,
            email=email,
            full_name=full_name,
            password=password,
            role=role,
            bot_type=bot_type if bot else None,
            bot_owner_id=bot_owner_id,
            now=services.clock.now(),
        )


async def find_user(services: Services, *, subdomain: str, email: str) -> User:
    async with services.db.read() as conn:
        realm = await access_realm_by_subdomain(conn, subdomain)
        user = await get_user_by_delivery_email(conn, realm.id, email)
        return user or await access_user_by_email(conn, realm.id, email)


def zuliprc_text(email: str, api_key: str, site: str) -> str:
    return f"[api]\nemail={email}\nkey={api_key}\nsite={site}\n"


# Where ``hubbub serve`` leaves the first owner's password when its output is no terminal.
OWNER_PASSWORD_FILE = "owner-password"


def unused_path(path: Path) -> Path:
    """``path``, or the first of ``path-2``, ``path-3``, ... that does not exist."""
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def write_private_file(path: Path, text: str) -> None:
    """Write ``text`` to a file readable by its owner only, in a directory that is too
    when this creates it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    # The mode above applies only to a new file; an existing one may be world-readable.
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def write_zuliprc(path: Path, email: str, api_key: str, site: str) -> None:
    """Write the file the official clients read; readable by its owner only (it holds a key)."""
    write_private_file(path, zuliprc_text(email, api_key, site))
