"""Reading users: lookups that return None (get_*) or raise (access_*)."""

from __future__ import annotations

import re

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.credentials import api_keys_match
from hubbub.db.fast import fetch_rows
from hubbub.db.tables import realm as realm_table
from hubbub.db.tables import user_profile
from hubbub.errors import JsonableError
from hubbub.models import EmailVisibility, Realm, Role, User
from hubbub.queries.user_dicts import DUMMY_EMAIL_DOMAIN


async def get_user_by_id(conn: AsyncConnection, realm_id: int, user_id: int) -> User | None:
    row = (
        await conn.execute(
            sa.select(user_profile).where(
                user_profile.c.id == user_id, user_profile.c.realm_id == realm_id
            )
        )
    ).first()
    return None if row is None else User.from_row(row)


async def get_user_by_email(conn: AsyncConnection, realm_id: int, email: str) -> User | None:
    """Find a user by API email, case-insensitively (message recipients, subscription
    principals, presence and avatars address users so; ``GET /users/{email}`` has
    ``access_user_by_email_for``)."""
    row = (
        await conn.execute(
            sa.select(user_profile).where(
                user_profile.c.realm_id == realm_id,
                sa.func.lower(user_profile.c.email) == email.strip().lower(),
            )
        )
    ).first()
    return None if row is None else User.from_row(row)


async def get_user_by_delivery_email(
    conn: AsyncConnection, realm_id: int, email: str
) -> User | None:
    row = (
        await conn.execute(
            sa.select(user_profile).where(
                user_profile.c.realm_id == realm_id,
                sa.func.lower(user_profile.c.delivery_email) == email.strip().lower(),
            )
        )
    ).first()
    return None if row is None else User.from_row(row)


_REALM_PREFIX = "r__"
_REALM_COLUMNS = [(_REALM_PREFIX + c.name, c.name) for c in realm_table.c]
_REALM_NAMES = [name for _label, name in _REALM_COLUMNS]
_USER_COLUMN_COUNT = len(user_profile.c)

# Built once: every authenticated request runs it, and building a statement and its cache
# key each time cost more than the query (one statement object is keyed once).
_LOGIN_CANDIDATES = (
    sa.select(user_profile, *[realm_table.c[name].label(label) for label, name in _REALM_COLUMNS])
    .join(realm_table, realm_table.c.id == user_profile.c.realm_id)
    .where(
        sa.or_(
            sa.func.lower(user_profile.c.email) == sa.bindparam("login", type_=sa.String),
            sa.func.lower(user_profile.c.delivery_email) == sa.bindparam("login", type_=sa.String),
        )
    )
)


async def get_login_candidates(conn: AsyncConnection, email: str) -> list[tuple[User, Realm]]:
    """Every account, in any realm, whose API or real email is ``email``, each with its
    realm, in one statement: every authenticated request starts here."""
    rows = await fetch_rows(conn, _LOGIN_CANDIDATES, {"login": email.strip().lower()})
    found = []
    for row in rows:
        # The realm's columns follow the user's, in _REALM_COLUMNS' order.
        realm_values = dict(zip(_REALM_NAMES, row[_USER_COLUMN_COUNT:], strict=True))
        found.append((User.from_row(row), Realm.from_mapping(realm_values)))
    return found


async def realm_ids_with_delivery_email(conn: AsyncConnection, email: str) -> list[int]:
    rows = await conn.execute(
        sa.select(user_profile.c.realm_id).where(
            sa.func.lower(user_profile.c.delivery_email) == email.strip().lower()
        )
    )
    return list(rows.scalars())


def _no_such_user() -> JsonableError:
    return JsonableError("No such user")


async def access_user_by_id(
    conn: AsyncConnection,
    realm_id: int,
    user_id: int,
    *,
    allow_deactivated: bool = False,
    allow_bots: bool = True,
) -> User:
    user = await get_user_by_id(conn, realm_id, user_id)
    if user is None or (user.is_bot and not allow_bots):
        raise _no_such_user()
    if not user.is_active and not allow_deactivated:
        raise JsonableError("User is deactivated")
    return user


async def access_user_by_email(
    conn: AsyncConnection, realm_id: int, email: str, *, allow_deactivated: bool = True
) -> User:
    user = await get_user_by_email(conn, realm_id, email)
    if user is None or (not user.is_active and not allow_deactivated):
        raise _no_such_user()
    return user


# The dummy address a hidden email is replaced by, naming the user's id (``api_email``).
# At most 18 digits, so that the id fits the database's integer.
_DUMMY_EMAIL = re.compile(r"user(\d{1,18})@" + re.escape(DUMMY_EMAIL_DOMAIN), re.IGNORECASE)

# Whose real email each role may look a user up by: the email visibility values that let
# the role see it (Zulip's ROLE_TO_ACCESSIBLE_EMAIL_ADDRESS_VISIBILITY_IDS). Nobody may
# use "nobody", not even its owner.
_VISIBILITIES_FOR_ROLE: dict[int, tuple[int, ...]] = {
    Role.OWNER: (
        EmailVisibility.EVERYONE,
        EmailVisibility.MEMBERS,
        EmailVisibility.MODERATORS,
        EmailVisibility.ADMINS,
    ),
    Role.ADMINISTRATOR: (
        EmailVisibility.EVERYONE,
        EmailVisibility.MEMBERS,
        EmailVisibility.MODERATORS,
        EmailVisibility.ADMINS,
    ),
    Role.MODERATOR: (
        EmailVisibility.EVERYONE,
        EmailVisibility.MEMBERS,
        EmailVisibility.MODERATORS,
    ),
    Role.MEMBER: (EmailVisibility.EVERYONE, EmailVisibility.MEMBERS),
    Role.GUEST: (EmailVisibility.EVERYONE,),
}


async def access_user_by_email_for(conn: AsyncConnection, viewer: User, email: str) -> User:
    """The user ``GET /users/{email}`` names (feature level 302), deactivated users and
    bots included: a dummy address finds the user of its id; any other address is a real
    email, found only where ``viewer``'s role may see it under the user's email
    visibility, and "No such user" otherwise, exactly as for an address nobody has, so
    the answer tells nothing about hidden addresses. As in Zulip, the visibility is
    checked in the lookup itself, and even for ``viewer``'s own address."""
    dummy = _DUMMY_EMAIL.fullmatch(email.strip())
    if dummy is not None:
        return await access_user_by_id(
            conn, viewer.realm_id, int(dummy.group(1)), allow_deactivated=True
        )
    row = (
        await conn.execute(
            sa.select(user_profile).where(
                user_profile.c.realm_id == viewer.realm_id,
                sa.func.lower(user_profile.c.delivery_email) == email.strip().lower(),
                user_profile.c.email_address_visibility.in_(
                    _VISIBILITIES_FOR_ROLE.get(viewer.role, ())
                ),
            )
        )
    ).first()
    if row is None:
        raise _no_such_user()
    return User.from_row(row)


# Built once: /register reads every user, and every realm-wide event its audience.
_USERS = (
    sa.select(user_profile)
    .where(user_profile.c.realm_id == sa.bindparam("realm_id"))
    .order_by(user_profile.c.id)
)
_ACTIVE_USERS = _USERS.where(user_profile.c.is_active)
_ACTIVE_USER_IDS = _ACTIVE_USERS.with_only_columns(user_profile.c.id)
_FIRST_ACTIVE_USER_IDS = _ACTIVE_USER_IDS.limit(sa.bindparam("limit"))


async def list_users(conn: AsyncConnection, realm_id: int) -> list[User]:
    rows = await fetch_rows(conn, _USERS, {"realm_id": realm_id})
    return [User.from_row(row) for row in rows]


async def list_active_users(conn: AsyncConnection, realm_id: int) -> list[User]:
    rows = await fetch_rows(conn, _ACTIVE_USERS, {"realm_id": realm_id})
    return [User.from_row(row) for row in rows]


async def active_user_ids(
    conn: AsyncConnection, realm_id: int, *, at_most: int | None = None
) -> list[int]:
    """The realm's active users (the audience of realm-wide events), in id order; only
    the first ``at_most`` of them if given (enough to tell whether a realm is bigger)."""
    if at_most is None:
        rows = await fetch_rows(conn, _ACTIVE_USER_IDS, {"realm_id": realm_id})
    else:
        params = {"realm_id": realm_id, "limit": at_most}
        rows = await fetch_rows(conn, _FIRST_ACTIVE_USER_IDS, params)
    return [user_id for (user_id,) in rows]


async def count_active_owners(conn: AsyncConnection, realm_id: int) -> int:
    return int(
        (
            await conn.execute(
                sa.select(sa.func.count())
                .select_from(user_profile)
                .where(
                    user_profile.c.realm_id == realm_id,
                    user_profile.c.role == Role.OWNER,
                    user_profile.c.is_active,
                    sa.not_(user_profile.c.is_bot),
                )
            )
        ).scalar_one()
    )


async def count_active_humans(conn: AsyncConnection, realm_id: int) -> int:
    return int(
        (
            await conn.execute(
                sa.select(sa.func.count())
                .select_from(user_profile)
                .where(
                    user_profile.c.realm_id == realm_id,
                    user_profile.c.is_active,
                    sa.not_(user_profile.c.is_bot),
                )
            )
        ).scalar_one()
    )


async def get_first_owner_id(conn: AsyncConnection, realm_id: int) -> int | None:
    """The longest-standing active human owner (who owns bots made from the command line)."""
    return (
        await conn.execute(
            sa.select(user_profile.c.id)
            .where(
                user_profile.c.realm_id == realm_id,
                user_profile.c.role == Role.OWNER,
                user_profile.c.is_active,
                sa.not_(user_profile.c.is_bot),
            )
            .order_by(user_profile.c.id)
            .limit(1)
        )
    ).scalar()


async def list_active_bots_owned_by(conn: AsyncConnection, owner_id: int) -> list[User]:
    rows = await conn.execute(
        sa.select(user_profile).where(
            user_profile.c.bot_owner_id == owner_id,
            user_profile.c.is_bot,
            user_profile.c.is_active,
        )
    )
    return [User.from_row(row) for row in rows]


async def get_user_by_api_key(conn: AsyncConnection, realm_id: int, api_key: str) -> User | None:
    """The realm's active user with this API key (file downloads authenticated by an
    ``api_key`` parameter alone, as Zulip allows)."""
    row = (
        await conn.execute(
            sa.select(user_profile).where(
                user_profile.c.realm_id == realm_id, user_profile.c.api_key == api_key
            )
        )
    ).first()
    if row is None:
        return None
    user = User.from_row(row)
    # A second, constant-time comparison: the lookup itself only narrowed the candidates.
    return user if user.is_active and api_keys_match(api_key, user.api_key) else None
